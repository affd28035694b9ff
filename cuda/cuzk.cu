// The one translation unit of the kernel fatbin: every kernel family, by folder.
#include "util/gather.cuh"
#include "util/scan.cuh"
#include "msm/pippenger.cuh"
#include "msm/affine_rounds.cuh"
#include "msm/batch_add.cuh"
#include "ntt/ntt.cuh"
#include "test/arith.cuh"
#include "bench/product_rate.cuh"
