//! The API's proof kinds and priorities, and the names the daemon reports them by.

use cuzk_pipeline::Priority;

use crate::proto;

/// A proof kind the API knows (`ProofKind` without its unspecified value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    PoRep,
    SnapDeals,
    WindowPost,
    WinningPost,
}

pub const KINDS: [Kind; 4] = [
    Kind::PoRep,
    Kind::SnapDeals,
    Kind::WindowPost,
    Kind::WinningPost,
];

impl Kind {
    /// The kind of a request's `proof_kind` field; `None` for unspecified or unknown numbers.
    pub fn from_wire(value: i32) -> Option<Self> {
        match proto::ProofKind::try_from(value).ok()? {
            proto::ProofKind::Unspecified => None,
            proto::ProofKind::PorepSealCommit => Some(Kind::PoRep),
            proto::ProofKind::SnapDealsUpdate => Some(Kind::SnapDeals),
            proto::ProofKind::WindowPostPartition => Some(Kind::WindowPost),
            proto::ProofKind::WinningPost => Some(Kind::WinningPost),
        }
    }

    /// The queue name `GetStatus` and the metrics use (the public engine's).
    pub fn queue_name(self) -> &'static str {
        match self {
            Kind::PoRep => "porep-c2",
            Kind::SnapDeals => "snap-update",
            Kind::WindowPost => "window-post",
            Kind::WinningPost => "winning-post",
        }
    }

    /// The `proof_kind` label of the metrics (Curio's daemon's values).
    pub fn metric_label(self) -> &'static str {
        match self {
            Kind::PoRep => "porep_c2",
            Kind::SnapDeals => "snap_update",
            Kind::WindowPost => "window_post",
            Kind::WinningPost => "winning_post",
        }
    }

    /// What Curio gets when it leaves the priority unspecified: WinningPoSt must finish within
    /// an epoch, WindowPoSt within its deadline, sealing can wait.
    pub fn default_priority(self) -> Priority {
        match self {
            Kind::WinningPost => Priority::Critical,
            Kind::WindowPost => Priority::High,
            Kind::PoRep | Kind::SnapDeals => Priority::Normal,
        }
    }

    /// How people call it, for error messages.
    pub fn title(self) -> &'static str {
        match self {
            Kind::PoRep => "PoRep C2",
            Kind::SnapDeals => "SnapDeals update",
            Kind::WindowPost => "WindowPoSt",
            Kind::WinningPost => "WinningPoSt",
        }
    }
}

/// A priority as the API names it.
pub fn priority_name(priority: Priority) -> &'static str {
    match priority {
        Priority::Low => "LOW",
        Priority::Normal => "NORMAL",
        Priority::High => "HIGH",
        Priority::Critical => "CRITICAL",
    }
}

/// A request's `priority` field: `None` when unspecified (the kind's default applies), an error
/// for numbers the API does not define.
pub fn priority_from_wire(value: i32) -> Result<Option<Priority>, i32> {
    match proto::Priority::try_from(value).map_err(|_| value)? {
        proto::Priority::Unspecified => Ok(None),
        proto::Priority::Low => Ok(Some(Priority::Low)),
        proto::Priority::Normal => Ok(Some(Priority::Normal)),
        proto::Priority::High => Ok(Some(Priority::High)),
        proto::Priority::Critical => Ok(Some(Priority::Critical)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_values_map_as_the_api_numbers_them() {
        assert_eq!(Kind::from_wire(0), None);
        assert_eq!(Kind::from_wire(1), Some(Kind::PoRep));
        assert_eq!(Kind::from_wire(4), Some(Kind::WinningPost));
        assert_eq!(Kind::from_wire(5), None);
        assert_eq!(priority_from_wire(0), Ok(None));
        assert_eq!(priority_from_wire(4), Ok(Some(Priority::Critical)));
        assert_eq!(priority_from_wire(9), Err(9));
        assert!(Kind::WinningPost.default_priority() > Kind::WindowPost.default_priority());
        assert!(Kind::WindowPost.default_priority() > Kind::PoRep.default_priority());
    }
}
