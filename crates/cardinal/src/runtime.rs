//! Where the library runs: its thread pool, and how idle workers wait ([`Runtime`]).
//!
//! Active waiting is the analogue of `OMP_WAIT_POLICY=ACTIVE`. A training batch has a dozen
//! short parallel sections separated by short serial stretches. An idle rayon worker soon
//! parks on a futex, and on a virtual machine waking a parked vCPU takes tens of
//! microseconds, several times per batch. While [`run_with_active_workers`] runs its closure,
//! every other worker of the pool instead polls for jobs (`rayon::yield_now`), so a parallel
//! section starts at once. It costs the otherwise idle cores' cycles, and never changes a
//! result: jobs and their order are those of the closure.

use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How the pool's idle workers wait while training runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitPolicy {
    /// Poll for work (faster on two or more threads; keeps the cores busy).
    #[default]
    Active,
    /// Sleep between parallel sections, as rayon's workers do (leaves the cores to others).
    Passive,
}

/// The thread pool a front end runs the library in: a number of threads and a wait policy,
/// passed in rather than set process-wide, so that two callers in one process (a CLI and a
/// test, or two Python estimators) do not disturb each other. Results are identical for any
/// thread count and either policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Runtime {
    /// Worker threads; `None`: rayon's default (`RAYON_NUM_THREADS`, else one per core).
    pub threads: Option<usize>,
    /// How idle workers wait during training.
    pub wait: WaitPolicy,
}

/// The most worker threads a runtime may ask for, per core: more only slows every thread
/// down (and a typo like `--threads 100000` would otherwise start that many).
pub const MAX_THREADS_PER_CORE: usize = 4;

/// The most worker threads a runtime may ask for on a machine of `cores` cores.
pub fn max_threads(cores: usize) -> usize {
    MAX_THREADS_PER_CORE.saturating_mul(cores.max(1))
}

/// The cores this process may run on (1 when that cannot be told).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl Runtime {
    /// Checks the thread count asked for: at most [`max_threads`] of this machine's cores.
    pub fn check(&self) -> Result<()> {
        match self.threads {
            Some(n) if n > max_threads(cores()) => Err(Error::OutOfRange {
                field: "threads".into(),
                value: n.to_string(),
                allowed: format!(
                    "at most {} ({MAX_THREADS_PER_CORE} per core, {} cores here); leave it out \
                     to use one per core",
                    max_threads(cores()),
                    cores()
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Runs `f` on a worker of a pool of this runtime's threads (refused when the thread
    /// count is out of bounds: see [`Runtime::check`]).
    ///
    /// `f` runs on a worker, not on the calling thread: a batch has dozens of short parallel
    /// sections, and entered from outside the pool each one would wake a worker and put the
    /// caller to sleep (measured in docs/journal/2026-11-26-speed.md).
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> Result<R> {
        self.check()?;
        let threads = self.threads.map_or(0, |n| n.max(1));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            // The main thread's stack size: the whole call runs on a worker.
            .stack_size(8 << 20)
            .build()
            .map_err(|source| Error::ThreadPool { threads, source })?;
        Ok(pool.install(f))
    }
}

/// Runs `f` on the current rayon worker while, under [`WaitPolicy::Active`], the pool's other
/// workers poll for jobs instead of sleeping. With one thread, or passive waiting, it just
/// runs `f`.
pub fn run_with_active_workers<R>(wait: WaitPolicy, f: impl FnOnce() -> R) -> R {
    let others = rayon::current_num_threads().saturating_sub(1);
    if others == 0 || wait == WaitPolicy::Passive {
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
        // Set on the way out, unwinding included: a panic in `f` must not leave the pollers
        // spinning (the scope would never end and the panic never reach the caller).
        let _release = ReleaseOnDrop(&done);
        f()
    })
}

/// Sets its flag when dropped.
struct ReleaseOnDrop<'a>(&'a AtomicBool);

impl Drop for ReleaseOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `threads = 100000` (the CLI's `--threads`, the Python estimator's `threads`) is
    /// refused before any thread starts, with a message that gives the bound.
    #[test]
    fn a_runaway_thread_count_is_refused() {
        let rt = Runtime {
            threads: Some(100_000),
            wait: WaitPolicy::Passive,
        };
        let e = rt.install(|| ()).unwrap_err().to_string();
        let bound = max_threads(cores());
        assert!(
            e.contains("threads = 100000") && e.contains(&format!("at most {bound}")),
            "{e}"
        );
        let ok = Runtime {
            threads: Some(bound),
            wait: WaitPolicy::Passive,
        };
        assert_eq!(ok.install(rayon::current_num_threads).unwrap(), bound);
        assert_eq!(max_threads(0), MAX_THREADS_PER_CORE);
    }

    #[test]
    fn a_panic_under_active_workers_reaches_the_caller_instead_of_hanging() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.install(|| {
                run_with_active_workers(WaitPolicy::Active, || -> u32 { panic!("boom") })
            })
        }));
        assert!(caught.is_err());
    }
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
                let got = pool.install(|| run_with_active_workers(WaitPolicy::Active, work));
                assert_eq!(got, expected, "{threads} threads");
            }
            // The pool is free again: a later call runs.
            assert_eq!(pool.install(|| rayon::join(|| 1, || 2)), (1, 2));
        }
        // From a thread outside any pool (the global pool's workers poll).
        assert_eq!(run_with_active_workers(WaitPolicy::Active, work), expected);
        // Passive (`--wait passive`): the closure alone, the same result.
        assert_eq!(run_with_active_workers(WaitPolicy::Passive, work), expected);
        // Through a runtime's own pool.
        let rt = Runtime {
            threads: Some(2),
            wait: WaitPolicy::Active,
        };
        let got = rt
            .install(|| run_with_active_workers(rt.wait, work))
            .unwrap();
        assert_eq!(got, expected);
        assert_eq!(rt.install(rayon::current_num_threads).unwrap(), 2);
    }
}
