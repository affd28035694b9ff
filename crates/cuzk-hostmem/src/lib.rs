//! Large host vectors whose pages the kernel is asked to back with transparent huge pages.
//!
//! One 32 GiB partition's witness is ~4 GB and each of its products as much, allocated afresh
//! for every partition. With 4 KiB pages the kernel takes a fault, and zeroes a page, a million
//! times per 4 GB, and tears as many down when the vector is freed: on the 2-core dev machine the
//! sectioned witness of a 4 GB partition spent 2.4–3.7 s gathering its sections and 0.4 s
//! freeing the result; on 2 MiB pages 0.4–1.1 s and 0.02 s (`docs/perf-notes.md`). Linux's
//! default for transparent huge pages is commonly `madvise`: only regions that ask get them,
//! which is what [`reserve`] does. Under `never` the advice is ignored, under `always` it is
//! redundant; elsewhere than Linux it is not given.

use rayon::prelude::*;

/// A huge page (x86-64 and arm64 with 4 KiB base pages).
const HUGE_PAGE: usize = 2 << 20;

/// Vectors smaller than this are left alone: only the huge pages wholly inside a buffer are
/// advised, and a smaller one may hold none (a PoRep partition's sections, ~24 MB apiece at
/// 32 GiB, are advised; a WindowPoSt sector's 1.7 MB is not).
pub const MIN_ADVISED_BYTES: usize = 4 << 20;

/// An empty vector with room for `capacity` values, its pages advised as [`reserve`] does.
pub fn with_capacity<T>(capacity: usize) -> Vec<T> {
    let mut values = Vec::new();
    reserve(&mut values, capacity);
    values
}

/// Reserves room for exactly `additional` more values and, when the vector's buffer is at least
/// [`MIN_ADVISED_BYTES`], asks the kernel to back it with huge pages. Best before the values are
/// written: pages already touched stay as they are until the kernel's background compaction
/// merges them.
pub fn reserve<T>(values: &mut Vec<T>, additional: usize) {
    values.reserve_exact(additional);
    let bytes = values.capacity().saturating_mul(size_of::<T>());
    if bytes >= MIN_ADVISED_BYTES {
        advise(values.as_ptr() as usize, bytes);
    }
}

/// Values copied per task when a piece is appended: a huge page of 32-byte values.
const COPY_CHUNK_BYTES: usize = HUGE_PAGE;

/// Appends each piece, less its first `skip` values (a prologue every piece repeats), to `values`,
/// in order, and frees it as soon as it is copied. A piece's copy is spread over the rayon pool
/// in chunks of a huge page, one piece at a time, so that at any moment only one piece is held
/// twice: gathering a 4 GB witness from its sections needs ~4 GB and a piece, not 8 GB.
///
/// # Panics
/// If a piece is shorter than `skip`.
pub fn append_freeing<T: Copy + Send + Sync>(
    values: &mut Vec<T>,
    pieces: Vec<Vec<T>>,
    skip: usize,
) {
    let added: usize = pieces.iter().map(|piece| piece.len() - skip).sum();
    reserve(values, added);
    let chunk = (COPY_CHUNK_BYTES / size_of::<T>().max(1)).max(1);
    let mut room = &mut values.spare_capacity_mut()[..added];
    for piece in pieces {
        let source = &piece[skip..];
        let (stretch, rest) = room.split_at_mut(source.len());
        stretch
            .par_chunks_mut(chunk)
            .zip(source.par_chunks(chunk))
            .for_each(|(to, from)| {
                to.write_copy_of_slice(from);
            });
        room = rest;
        drop(piece);
    }
    let len = values.len() + added;
    // SAFETY: `reserve` made room for `added` more values. The pieces' stretches tile
    // `spare_capacity_mut()[..added]` in order, and each stretch was written whole, chunk by
    // chunk, before its piece was dropped (the parallel loop returns once every chunk is
    // written). So the first `len` values are initialised (`T: Copy`: nothing to drop).
    unsafe { values.set_len(len) };
}

/// Advises the huge pages wholly inside `[start, start + bytes)`.
#[cfg(target_os = "linux")]
fn advise(start: usize, bytes: usize) {
    let (first, end) = (start.next_multiple_of(HUGE_PAGE), start + bytes);
    let last = end - end % HUGE_PAGE;
    if last > first {
        // SAFETY: [first, last) lies inside the vector's buffer, which the caller's vector owns
        // and keeps allocated through this call. MADV_HUGEPAGE changes only how the kernel backs
        // those pages, never their contents, mapping or protection, so no value is touched and
        // the buffer stays valid for the vector. It is only a hint: an error (a kernel without
        // transparent huge pages) leaves the pages as they were.
        let _ = unsafe {
            rustix::mm::madvise(
                first as *mut std::ffi::c_void,
                last - first,
                rustix::mm::Advice::LinuxHugepage,
            )
        };
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_start: usize, _bytes: usize) {}

/// The kernel's transparent huge page mode (`always`, `madvise` or `never`), where it says.
pub fn transparent_huge_pages() -> Option<String> {
    let modes = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
    let chosen = modes.split_whitespace().find(|m| m.starts_with('['))?;
    Some(chosen.trim_matches(['[', ']']).to_owned())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The kernel's huge-page-backed bytes in the mapping that holds `address`
    /// (`/proc/self/smaps`: a header line per mapping, `lo-hi perms …`, then its fields).
    #[cfg(target_os = "linux")]
    fn huge_bytes_at(address: usize) -> Option<u64> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let range = |line: &str| {
            let (lo, hi) = line.split_once(' ')?.0.split_once('-')?;
            Some(usize::from_str_radix(lo, 16).ok()?..usize::from_str_radix(hi, 16).ok()?)
        };
        let mut lines = smaps.lines();
        lines.find(|line| range(line).is_some_and(|r| r.contains(&address)))?;
        let kb = lines.find_map(|line| line.strip_prefix("AnonHugePages:"))?;
        Some(
            kb.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()?
                << 10,
        )
    }

    /// The kernel's count of huge page faults that fell back to small pages (`/proc/vmstat`).
    #[cfg(target_os = "linux")]
    fn huge_page_fallbacks() -> u64 {
        let vmstat = std::fs::read_to_string("/proc/vmstat").unwrap_or_default();
        let line = vmstat
            .lines()
            .find_map(|l| l.strip_prefix("thp_fault_fallback "));
        line.and_then(|n| n.parse().ok()).unwrap_or(0)
    }

    /// Values written after the advice read back; with the kernel in `madvise` or `always` mode
    /// the buffer is on huge pages, unless the kernel had none free (it then counts a fallback:
    /// it was asked).
    #[test]
    fn an_advised_vector_holds_its_values_on_huge_pages_where_the_kernel_offers_them() {
        let value = |i: usize| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let count = 24 * MIN_ADVISED_BYTES / size_of::<u64>();
        #[cfg(target_os = "linux")]
        let fallbacks = huge_page_fallbacks();
        let mut values: Vec<u64> = with_capacity(count);
        assert!(values.capacity() >= count);
        values.extend((0..count).map(value));
        assert!(values.iter().enumerate().all(|(i, v)| *v == value(i)));
        #[cfg(target_os = "linux")]
        match transparent_huge_pages().as_deref() {
            Some("madvise" | "always") => {
                // The advice splits the mapping: the advised part starts at the first boundary.
                let advised = (values.as_ptr() as usize).next_multiple_of(HUGE_PAGE);
                let huge = huge_bytes_at(advised).unwrap();
                let fell_back = huge_page_fallbacks() > fallbacks;
                assert!(
                    huge >= HUGE_PAGE as u64 || fell_back,
                    "{huge} bytes on huge pages"
                );
            }
            mode => eprintln!("transparent huge pages {mode:?}: the advice is not taken"),
        }
    }

    #[test]
    fn pieces_appended_follow_the_values_in_order_without_their_prologue() {
        let skip = 5;
        let pieces: Vec<Vec<u32>> = (0..37u32)
            .map(|p| {
                (0..skip as u32 + p * 7919 % 300_007)
                    .map(|i| p << 24 | i)
                    .collect()
            })
            .collect();
        let expected: Vec<u32> = [7, 8, 9]
            .into_iter()
            .chain(
                pieces
                    .iter()
                    .flat_map(|piece| piece[skip..].iter().copied()),
            )
            .collect();
        let mut values = vec![7, 8, 9];
        append_freeing(&mut values, pieces, skip);
        assert_eq!(values, expected);
        append_freeing(&mut values, Vec::new(), skip);
        append_freeing(&mut values, vec![vec![1; skip]], skip);
        assert_eq!(values, expected);
    }

    #[test]
    fn small_vectors_are_left_alone() {
        let values: Vec<u8> = with_capacity(1000);
        assert!(values.capacity() >= 1000 && values.capacity() < MIN_ADVISED_BYTES);
    }
}
