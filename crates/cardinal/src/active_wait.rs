//! Active waiting for rayon's workers, the analogue of `OMP_WAIT_POLICY=ACTIVE`.
//!
//! A training batch has a dozen short parallel sections separated by short serial stretches.
//! An idle rayon worker soon parks on a futex, and on a virtual machine waking a parked vCPU
//! takes tens of microseconds, several times per batch. While [`run_with_active_workers`]
//! runs its closure, every other worker of the pool instead polls for jobs
//! (`rayon::yield_now`), so a parallel section starts at once. It costs the otherwise idle
//! cores' cycles, and never changes a result: jobs and their order are those of the closure.

use std::sync::atomic::{AtomicBool, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns active waiting on (the default) or off for the whole process: off, the other workers
/// sleep between parallel sections as rayon's do, leaving the cores to other programs.
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Runs `f` on the current rayon worker while the pool's other workers poll for jobs instead of
/// sleeping. With one thread, or with active waiting off ([`set_enabled`]), it just runs `f`.
pub fn run_with_active_workers<R>(f: impl FnOnce() -> R) -> R {
    let others = rayon::current_num_threads().saturating_sub(1);
    if others == 0 || !ENABLED.load(Ordering::Relaxed) {
        return f();
    }
    let done = AtomicBool::new(false);
    let owner = rayon::current_thread_index();
    let poll = || {
        // A poller that the calling worker picks up itself (while it waits inside `f`) must
        // return at once: it would otherwise spin until `f`, which it blocks, is done.
        if rayon::current_thread_index() == owner {
            return;
        }
        while !done.load(Ordering::Acquire) {
            match rayon::yield_now() {
                Some(rayon::Yield::Executed) => {}
                Some(rayon::Yield::Idle) => std::hint::spin_loop(),
                None => break,
            }
        }
    };
    rayon::in_place_scope(|s| {
        for _ in 0..others {
            s.spawn(|_| poll());
        }
        let r = f();
        done.store(true, Ordering::Release);
        r
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    /// Nested parallel work inside the closure completes with the same result as without
    /// active workers, on one, two and four threads (a poller picked up by the calling worker
    /// must not block it), and the pollers stop when the closure returns.
    #[test]
    fn nested_parallel_work_completes_with_the_same_result() {
        let work = || {
            (0..50)
                .map(|round| {
                    let (a, b) = rayon::join(
                        || (0..1000u64).into_par_iter().map(|i| i * round).sum::<u64>(),
                        || (0..777u64).into_par_iter().map(|i| i ^ round).sum::<u64>(),
                    );
                    a + b
                })
                .collect::<Vec<u64>>()
        };
        let expected = work();
        for threads in [1, 2, 4] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            for _ in 0..20 {
                let got = pool.install(|| run_with_active_workers(work));
                assert_eq!(got, expected, "{threads} threads");
            }
            // The pool is free again: a later call runs.
            assert_eq!(pool.install(|| rayon::join(|| 1, || 2)), (1, 2));
        }
        // From a thread outside any pool (the global pool's workers poll).
        assert_eq!(run_with_active_workers(work), expected);
        // Turned off (`--wait passive`): the closure alone, the same result.
        set_enabled(false);
        let passive = run_with_active_workers(work);
        set_enabled(true);
        assert_eq!(passive, expected);
    }
}
