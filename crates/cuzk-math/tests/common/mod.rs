//! Shared test helper: a seeded RNG whose seed changes per run but is printed
//! (captured output is shown for failing tests) and can be pinned with
//! `CUZK_TEST_SEED`.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub fn rng() -> (u64, ChaCha8Rng) {
    let seed = cuzk_testkit::seed("cuzk-math");
    (seed, ChaCha8Rng::seed_from_u64(seed))
}
