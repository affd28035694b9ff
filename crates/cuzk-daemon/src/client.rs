//! A client of the daemon, for the `cuzk client` commands, tests and load generators: connects
//! as Curio does (unix socket or TCP, optionally with a bearer token) and forms requests as
//! Curio forms them.

use std::path::PathBuf;

use base64::Engine as _;
use cuzk_filecoin::{C1Output, FilecoinError, PostKind, PostRequest, RegisteredProof, SnapRequest};
use tonic::metadata::AsciiMetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::service::Interceptor;
use tonic::transport::{Channel, Endpoint};

use crate::circuits::synthetic::SyntheticRequest;
use crate::config::Listen;
use crate::proto::proving_engine_client::ProvingEngineClient;
use crate::proto::{self, ProofKind, SubmitProofRequest};

/// Sends `authorization: Bearer <token>` when it has one.
#[derive(Clone, Debug)]
pub struct Bearer(Option<AsciiMetadataValue>);

impl Interceptor for Bearer {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(token) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", token.clone());
        }
        Ok(request)
    }
}

pub type Client = ProvingEngineClient<InterceptedService<Channel, Bearer>>;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("address {0}")]
    Address(String),
    #[error("connecting to {address}: {source}")]
    Connect {
        address: String,
        #[source]
        source: tonic::transport::Error,
    },
    #[error("the token is not a valid header value")]
    Token,
    #[error(transparent)]
    C1(#[from] FilecoinError),
}

/// Connects to `address` (`unix:///PATH` or `HOST:PORT`), with Curio's 256 MiB limits.
pub async fn connect(address: &str, token: Option<&str>) -> Result<Client, ClientError> {
    let channel = channel(address).await?;
    let token = token
        .map(|t| {
            format!("Bearer {t}")
                .parse()
                .map_err(|_| ClientError::Token)
        })
        .transpose()?;
    Ok(
        ProvingEngineClient::with_interceptor(channel, Bearer(token))
            .max_decoding_message_size(proto::MAX_MESSAGE_BYTES)
            .max_encoding_message_size(proto::MAX_MESSAGE_BYTES),
    )
}

/// A connection to `address` (`unix:///PATH` or `HOST:PORT`), for clients of any service there
/// (or raw calls).
pub async fn channel(address: &str) -> Result<Channel, ClientError> {
    let listen = Listen::parse(address).map_err(ClientError::Address)?;
    let connect_error = |source| ClientError::Connect {
        address: address.to_owned(),
        source,
    };
    Ok(match listen {
        Listen::Unix(path) => {
            let path: PathBuf = path;
            // The URI is a placeholder: the connector below dials the socket.
            Endpoint::from_static("http://localhost")
                .connect_with_connector(tower::service_fn(move |_| {
                    let path = path.clone();
                    async move {
                        Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(
                            tokio::net::UnixStream::connect(path).await?,
                        ))
                    }
                }))
                .await
                .map_err(connect_error)?
        }
        Listen::Tcp(addr) => Endpoint::from_shared(format!("http://{addr}"))
            .map_err(connect_error)?
            .connect()
            .await
            .map_err(connect_error)?,
    })
}

/// A PoRep C2 request exactly as Curio forms it: the C1 output (its JSON as the FFI writes it,
/// which names its registered proof) base64-encoded in the `{SectorNum, Phase1Out, SectorSize}`
/// wrapper, the registered proof's number, the miner and sector.
pub fn porep_request(
    request_id: &str,
    c1_json: &[u8],
    source: &str,
    miner_id: u64,
    sector_number: u64,
) -> Result<SubmitProofRequest, ClientError> {
    let c1 = C1Output::from_json(c1_json, source, None)?;
    let size = c1.proof.size.bytes();
    let wrapper = serde_json::json!({
        "SectorNum": sector_number,
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(c1_json),
        "SectorSize": size,
    });
    Ok(SubmitProofRequest {
        request_id: request_id.to_owned(),
        proof_kind: ProofKind::PorepSealCommit.into(),
        sector_size: size,
        registered_proof: c1.proof.number(),
        priority: proto::Priority::Normal.into(),
        vanilla_proof: wrapper.to_string().into_bytes(),
        sector_number,
        miner_id,
        ..Default::default()
    })
}

/// A WinningPoSt or WindowPoSt request as Curio forms it from a request file
/// (`PostRequest::read`): the kind from its registered proof, its vanilla proofs, randomness and
/// WindowPoSt partition, and the miner, whose prover id the daemon derives (the file's own
/// `prover_id` is not sent).
pub fn post_request(request_id: &str, post: &PostRequest, miner_id: u64) -> SubmitProofRequest {
    let kind = match post.proof.kind {
        PostKind::Winning => ProofKind::WinningPost,
        _ => ProofKind::WindowPostPartition,
    };
    SubmitProofRequest {
        request_id: request_id.to_owned(),
        proof_kind: kind.into(),
        registered_proof: post.proof.number(),
        vanilla_proofs: post.vanilla_proofs.clone(),
        randomness: post.randomness.to_vec(),
        miner_id,
        partition_index: u32::try_from(post.partition).unwrap_or(u32::MAX),
        ..Default::default()
    }
}

/// A SnapDeals update request as Curio forms it from a request file (`SnapRequest::read`): its
/// partition proofs and the three commitments.
pub fn snap_request(request_id: &str, snap: &SnapRequest, miner_id: u64) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: request_id.to_owned(),
        proof_kind: ProofKind::SnapDealsUpdate.into(),
        registered_proof: snap.proof.number(),
        sector_size: snap.proof.size.bytes(),
        vanilla_proofs: snap.vanilla_proofs.clone(),
        comm_r_old: snap.comm_r_old.to_vec(),
        comm_r_new: snap.comm_r_new.to_vec(),
        comm_d_new: snap.comm_d_new.to_vec(),
        miner_id,
        ..Default::default()
    }
}

/// A request for a daemon serving the synthetic circuits (`[daemon] circuits = "synthetic"`):
/// `partitions` partitions of `constraints` constraints each.
pub fn synthetic_request(
    request_id: &str,
    constraints: usize,
    partitions: usize,
) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: request_id.to_owned(),
        proof_kind: ProofKind::PorepSealCommit.into(),
        vanilla_proof: SyntheticRequest {
            partitions,
            ..SyntheticRequest::new(constraints)
        }
        .to_bytes(),
        ..Default::default()
    }
}
