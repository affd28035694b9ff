//! The PoRep types of filecoin's crates for one tree shape, named once.

use filecoin_proofs::DefaultPieceHasher;
use storage_proofs_porep::stacked::{StackedCircuit, StackedCompound, StackedDrg};

pub(crate) type Drg<'a, Tree> = StackedDrg<'a, Tree, DefaultPieceHasher>;
pub(crate) type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
pub(crate) type Circuit<Tree> = StackedCircuit<Tree, DefaultPieceHasher>;
