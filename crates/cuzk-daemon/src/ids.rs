//! Request ids: what a request asks to be proven (its content, as a digest) and what a new
//! request does with the attempt already registered under its id.
//!
//! Curio's ids stay the same when a task is retried (`porep-<miner>-<sector>`), so an id names a
//! *task*, not one computation: a request joins the attempt under its id only while that attempt
//! can still give it the proof it asks for — running or completed, with the same content. A
//! failed or cancelled attempt is retried; an attempt for other content (a PoRep whose seed was
//! re-read after a reorg) is superseded.

use sha2::{Digest, Sha256};

use crate::proto::SubmitProofRequest;

/// A digest of everything a request asks to be proven: its kind, registered proof, sizes,
/// payloads, ids, randomness and commitments — all but its request id and priority.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Content([u8; 32]);

impl std::fmt::Debug for Content {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for byte in &self.0[..6] {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl Content {
    /// The request's content. Each field is length-prefixed, so no two requests that differ
    /// share a digest by moving bytes from one field to the next.
    pub fn of(request: &SubmitProofRequest) -> Self {
        let mut hash = Sha256::new();
        let mut bytes = |field: &[u8]| {
            hash.update((field.len() as u64).to_le_bytes());
            hash.update(field);
        };
        bytes(&request.proof_kind.to_le_bytes());
        bytes(&request.registered_proof.to_le_bytes());
        bytes(&request.sector_size.to_le_bytes());
        bytes(&request.vanilla_proof);
        bytes(&(request.vanilla_proofs.len() as u64).to_le_bytes());
        for proof in &request.vanilla_proofs {
            bytes(proof);
        }
        bytes(&request.sector_number.to_le_bytes());
        bytes(&request.miner_id.to_le_bytes());
        bytes(&request.randomness);
        bytes(&request.partition_index.to_le_bytes());
        bytes(&request.comm_r_old);
        bytes(&request.comm_r_new);
        bytes(&request.comm_d_new);
        Content(hash.finalize().into())
    }
}

/// Where the attempt registered under an id stands, as far as a new request cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Queued or proving, not cancelled.
    Running,
    Completed,
    Failed,
    /// Cancelled, or being cancelled.
    Cancelled,
}

/// What a new request does with the attempt registered under its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// No attempt under this id: the first.
    First,
    /// The same content, running or completed: wait for (or take) its proof.
    Join,
    /// The attempt failed or was cancelled: a new attempt, whatever the content.
    Retry { after: Standing },
    /// Other content: a new attempt replaces it; a running one is cancelled and its callers
    /// get the new attempt's result.
    Supersede { running: bool },
}

impl Decision {
    pub fn of(registered: Option<(Standing, Content)>, content: Content) -> Self {
        match registered {
            None => Decision::First,
            Some((after @ (Standing::Failed | Standing::Cancelled), _)) => {
                Decision::Retry { after }
            }
            Some((_, existing)) if existing == content => Decision::Join,
            Some((standing, _)) => Decision::Supersede {
                running: standing == Standing::Running,
            },
        }
    }

    /// How the log says it.
    pub fn describe(self) -> &'static str {
        match self {
            Decision::First => "new job",
            Decision::Join => "joined the job under its id",
            Decision::Retry {
                after: Standing::Failed,
            } => "retried after FAILED",
            Decision::Retry { .. } => "retried after CANCELLED",
            Decision::Supersede { running: true } => {
                "superseded the running job under its id (other content)"
            }
            Decision::Supersede { running: false } => {
                "superseded the completed job under its id (other content)"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(vanilla: &[u8]) -> SubmitProofRequest {
        SubmitProofRequest {
            request_id: "porep-1000-7".into(),
            proof_kind: 1,
            vanilla_proof: vanilla.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn the_content_ignores_id_and_priority_and_sees_every_other_field() {
        let base = request(b"{}");
        let same = SubmitProofRequest {
            request_id: "other".into(),
            priority: 4,
            ..base.clone()
        };
        assert_eq!(Content::of(&base), Content::of(&same));
        let changed: [fn(&mut SubmitProofRequest); 12] = [
            |r| r.proof_kind = 2,
            |r| r.registered_proof = 8,
            |r| r.sector_size = 2048,
            |r| r.vanilla_proof.push(b' '),
            |r| r.vanilla_proofs.push(Vec::new()),
            |r| r.sector_number = 8,
            |r| r.miner_id = 1001,
            |r| r.randomness = vec![1; 32],
            |r| r.partition_index = 1,
            |r| r.comm_r_old = vec![1],
            |r| r.comm_r_new = vec![1],
            |r| r.comm_d_new = vec![1],
        ];
        for (i, change) in changed.iter().enumerate() {
            let mut other = base.clone();
            change(&mut other);
            assert_ne!(Content::of(&base), Content::of(&other), "field change {i}");
        }
        // Bytes moved between neighbouring fields change it too.
        let mut split = base.clone();
        split.vanilla_proofs = vec![b"ab".to_vec(), Vec::new()];
        let mut moved = base;
        moved.vanilla_proofs = vec![b"a".to_vec(), b"b".to_vec()];
        assert_ne!(Content::of(&split), Content::of(&moved));
    }

    #[test]
    fn failed_and_cancelled_attempts_are_never_joined() {
        let (a, b) = (Content::of(&request(b"a")), Content::of(&request(b"b")));
        assert_eq!(Decision::of(None, a), Decision::First);
        assert_eq!(
            Decision::of(Some((Standing::Running, a)), a),
            Decision::Join
        );
        assert_eq!(
            Decision::of(Some((Standing::Completed, a)), a),
            Decision::Join
        );
        for after in [Standing::Failed, Standing::Cancelled] {
            for content in [a, b] {
                assert_eq!(
                    Decision::of(Some((after, a)), content),
                    Decision::Retry { after }
                );
            }
        }
        assert_eq!(
            Decision::of(Some((Standing::Running, a)), b),
            Decision::Supersede { running: true }
        );
        assert_eq!(
            Decision::of(Some((Standing::Completed, a)), b),
            Decision::Supersede { running: false }
        );
    }
}
