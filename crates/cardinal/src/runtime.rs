//! Where the library runs: its thread pool, how idle workers wait, the memory budget of
//! training and the data folder ([`Runtime`]). The library reads no environment variable: a
//! front end (the CLI's `main`, the Python module's init) reads them once with
//! [`Environment::read`] and passes what they say in a [`Runtime`].
//!
//! Active waiting is the analogue of `OMP_WAIT_POLICY=ACTIVE`. A training batch has a dozen
//! short parallel sections separated by short serial stretches. An idle rayon worker soon
//! parks on a futex, and on a virtual machine waking a parked vCPU takes tens of
//! microseconds, several times per batch. While `run_with_active_workers` runs its closure,
//! every other worker of the pool instead polls for jobs (`rayon::yield_now`), so a parallel
//! section starts at once. It costs the otherwise idle cores' cycles, and never changes a
//! result: jobs and their order are those of the closure.

use std::path::PathBuf;
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

/// Where a front end runs the library: a thread pool (a number of threads and a wait
/// policy), the memory budget of training and the data folder, passed in rather than set
/// process-wide, so that two callers in one process (a CLI and a test, or two Python
/// estimators) do not disturb each other. Results are identical for any thread count and
/// either policy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Runtime {
    /// Worker threads; `None`: rayon's default (`RAYON_NUM_THREADS`, else one per core).
    pub threads: Option<usize>,
    /// How idle workers wait during training.
    pub wait: WaitPolicy,
    /// The most training memory a model may need (`CARDINAL_MEMORY_BUDGET`).
    pub memory_budget: MemoryBudget,
    /// The folder datasets are looked up in by name when a call names none (`CARDINAL_DATA`);
    /// also for runs whose `run.json` records none.
    pub data_dir: Option<PathBuf>,
}

/// The environment variable of [`Runtime::memory_budget`].
pub(crate) const MEMORY_BUDGET_VAR: &str = "CARDINAL_MEMORY_BUDGET";
/// The environment variable of [`Runtime::data_dir`].
pub(crate) const DATA_VAR: &str = "CARDINAL_DATA";

/// The environment variables the library's behaviour depends on, as a front end read them
/// (once, at start-up; nothing else in the library reads the environment).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    /// `CARDINAL_MEMORY_BUDGET`, as written.
    pub memory_budget: Option<String>,
    /// `CARDINAL_DATA`.
    pub data_dir: Option<PathBuf>,
}

impl Environment {
    /// Reads the variables from this process's environment.
    pub fn read() -> Self {
        Self {
            memory_budget: std::env::var(MEMORY_BUDGET_VAR).ok(),
            data_dir: std::env::var_os(DATA_VAR).map(PathBuf::from),
        }
    }

    /// A runtime of `threads` and `wait` with this environment's budget and data folder;
    /// refused when the budget does not parse.
    pub fn runtime(&self, threads: Option<usize>, wait: WaitPolicy) -> Result<Runtime> {
        Ok(Runtime {
            threads,
            wait,
            memory_budget: MemoryBudget::parse(self.memory_budget.as_deref())?,
            data_dir: self.data_dir.clone(),
        })
    }
}

/// The most memory a model's training may need, by the memory guard's estimate (see
/// [`crate::train::init_model_within`]): a number of bytes, or no limit. The default is
/// 16 GiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBudget {
    /// Bytes; `None`: no limit.
    bytes: Option<u64>,
}

impl Default for MemoryBudget {
    fn default() -> Self {
        Self::bytes(16 << 30)
    }
}

impl MemoryBudget {
    /// No limit.
    pub(crate) const UNLIMITED: Self = Self { bytes: None };

    /// A budget of `bytes` (0: no limit).
    pub(crate) fn bytes(bytes: u64) -> Self {
        Self {
            bytes: (bytes > 0).then_some(bytes),
        }
    }

    /// The budget in bytes; `None`: no limit.
    pub(crate) fn limit(self) -> Option<u64> {
        self.bytes
    }

    /// Reads `CARDINAL_MEMORY_BUDGET`'s value: bytes with an optional binary `K`/`M`/`G`/`T`
    /// suffix (`64G`, `1.5T`), `0` for no limit; left out or blank, the default (16 GiB).
    pub(crate) fn parse(text: Option<&str>) -> Result<Self> {
        let v = match text.map(str::trim) {
            None | Some("") => return Ok(Self::default()),
            Some(v) => v,
        };
        let (num, mult) = match v.char_indices().last() {
            Some((i, c)) if c.is_ascii_alphabetic() => {
                let power = match c.to_ascii_uppercase() {
                    'K' => Some(1),
                    'M' => Some(2),
                    'G' => Some(3),
                    'T' => Some(4),
                    _ => None,
                };
                (&v[..i], power.map_or(f64::NAN, |p| 1024f64.powi(p)))
            }
            _ => (v, 1.0),
        };
        match num.trim().parse::<f64>() {
            // Whole bytes: a fraction of a byte above 0 still sets a (tiny) limit.
            Ok(x) if x >= 0.0 && (x * mult).is_finite() => Ok(match (x * mult).ceil() {
                b if b > 0.0 => Self {
                    bytes: Some(b as u64),
                },
                _ => Self::UNLIMITED,
            }),
            _ => Err(Error::OutOfRange {
                field: MEMORY_BUDGET_VAR.into(),
                value: format!("`{v}`"),
                allowed: "bytes with an optional K/M/G/T suffix (e.g. 32G), or 0 for no limit"
                    .into(),
            }),
        }
    }
}

/// The most worker threads a runtime may ask for, per core: more only slows every thread
/// down (and a typo like `--threads 100000` would otherwise start that many).
pub(crate) const MAX_THREADS_PER_CORE: usize = 4;

/// The most worker threads a runtime may ask for on a machine of `cores` cores.
pub(crate) fn max_threads(cores: usize) -> usize {
    MAX_THREADS_PER_CORE.saturating_mul(cores.max(1))
}

/// The cores this process may run on (1 when that cannot be told).
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Checks a thread count asked for by the option `field` (`threads`, Python's `n_jobs`): at
/// least 1 and at most [`MAX_THREADS_PER_CORE`] per core of this machine.
fn check_threads(threads: Option<usize>, field: &str) -> Result<()> {
    match threads {
        Some(n) if n == 0 || n > max_threads(cores()) => Err(Error::OutOfRange {
            field: field.into(),
            value: n.to_string(),
            allowed: format!(
                "at least 1 and at most {} ({MAX_THREADS_PER_CORE} per core, {} cores here); \
                 leave it out to use one per core",
                max_threads(cores()),
                cores()
            ),
        }),
        _ => Ok(()),
    }
}

/// The one constructor of the library's thread pools, used by every front end: `threads`
/// workers (`None`: rayon's default, one per core), checked before any thread starts against
/// the cap of 4 threads per core (`field` names the option in the refusal:
/// `threads`, `n_jobs`), each with the main thread's stack size, since whole calls run on a
/// worker.
///
/// ```
/// let pool = cardinal::runtime::thread_pool(Some(2), "threads").unwrap();
/// assert_eq!(pool.current_num_threads(), 2);
/// let e = cardinal::runtime::thread_pool(Some(1 << 20), "n_jobs").unwrap_err();
/// assert!(e.to_string().contains("n_jobs"), "{e}");
/// ```
pub fn thread_pool(threads: Option<usize>, field: &str) -> Result<rayon::ThreadPool> {
    check_threads(threads, field)?;
    let n = threads.unwrap_or(0);
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .stack_size(8 << 20)
        .build()
        .map_err(|source| Error::ThreadPool { threads: n, source })
}

impl Runtime {
    /// Runs `f` on a worker of a pool of this runtime's threads (refused when the thread
    /// count is out of bounds: see [`thread_pool`]).
    ///
    /// `f` runs on a worker, not on the calling thread: a batch has dozens of short parallel
    /// sections, and entered from outside the pool each one would wake a worker and put the
    /// caller to sleep (measured in docs/journal/2026-11-26-speed.md).
    pub(crate) fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> Result<R> {
        let pool = thread_pool(self.threads.map(|n| n.max(1)), "threads")?;
        Ok(pool.install(f))
    }
}

/// Runs `f` on the current rayon worker while, under [`WaitPolicy::Active`], the pool's other
/// workers poll for jobs instead of sleeping. With one thread, or passive waiting, it just
/// runs `f`.
pub(crate) fn run_with_active_workers<R>(wait: WaitPolicy, f: impl FnOnce() -> R) -> R {
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
            ..Runtime::default()
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
            ..Runtime::default()
        };
        assert_eq!(ok.install(rayon::current_num_threads).unwrap(), bound);
        assert_eq!(max_threads(0), MAX_THREADS_PER_CORE);
    }

    /// `CARDINAL_MEMORY_BUDGET`'s grammar: bytes, a binary suffix, 0 for no limit, blank for
    /// the default; anything else refused by the variable's name, value and what it takes.
    #[test]
    fn the_memory_budget_is_read_from_the_value_passed_in() {
        let gib = 1u64 << 30;
        assert_eq!(MemoryBudget::parse(None).unwrap().limit(), Some(16 * gib));
        assert_eq!(
            MemoryBudget::parse(Some(" ")).unwrap(),
            MemoryBudget::default()
        );
        assert_eq!(
            MemoryBudget::parse(Some("64G")).unwrap().limit(),
            Some(64 * gib)
        );
        assert_eq!(MemoryBudget::parse(Some("2k")).unwrap().limit(), Some(2048));
        assert_eq!(
            MemoryBudget::parse(Some("1.5T")).unwrap().limit(),
            Some(1536 * gib)
        );
        assert_eq!(MemoryBudget::parse(Some("123")).unwrap().limit(), Some(123));
        assert_eq!(
            MemoryBudget::parse(Some("0")).unwrap(),
            MemoryBudget::UNLIMITED
        );
        for bad in ["lots", "-1G", "12X", "G", "inf"] {
            match MemoryBudget::parse(Some(bad)) {
                Err(Error::OutOfRange {
                    field,
                    value,
                    allowed,
                }) => {
                    assert_eq!(field, MEMORY_BUDGET_VAR);
                    assert_eq!(value, format!("`{bad}`"));
                    assert!(allowed.contains("K/M/G/T"), "{allowed}");
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        let env = Environment {
            memory_budget: Some("1M".into()),
            data_dir: Some("/data".into()),
        };
        let rt = env.runtime(Some(2), WaitPolicy::Passive).unwrap();
        assert_eq!(rt.memory_budget.limit(), Some(1 << 20));
        assert_eq!(rt.data_dir.as_deref(), Some(std::path::Path::new("/data")));
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
            ..Runtime::default()
        };
        let got = rt
            .install(|| run_with_active_workers(rt.wait, work))
            .unwrap();
        assert_eq!(got, expected);
        assert_eq!(rt.install(rayon::current_num_threads).unwrap(), 2);
    }
}
