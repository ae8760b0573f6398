//! CPU-feature dispatch: one generic body compiled for several instruction sets, the widest
//! one the CPU has picked at run time.
//!
//! The release binary targets baseline x86-64 (SSE2), so LLVM vectorises a loop at 128 bits
//! unless the function it sits in is compiled with `#[target_feature]`. [`dispatch!`] writes
//! the body once and compiles a copy per feature set (AVX-512, AVX2, ...), each vectorised at
//! its width, plus the plain copy as the fallback. Every copy performs the same IEEE
//! operations in the same order (Rust never contracts a mul and an add into an FMA, and
//! `+ − × ÷ √` are exactly rounded at any width), so all of them compute bit-identical
//! numbers: which one runs changes the speed, never a trained model.
//!
//! Calling a `#[target_feature]` function is `unsafe` unless the caller has the features: the
//! generated wrapper checks them first, and is the workspace's one exception to
//! `unsafe_code = "deny"`.

/// Defines a function whose body is compiled once per listed CPU-feature set and once plain;
/// a call runs the first set the CPU supports (list the widest first), else the plain copy.
///
/// ```text
/// crate::simd::dispatch! {
///     features ["avx512f", "avx512bw"], ["avx2"];
///     /// What it computes (the attributes and docs go on the generated function).
///     pub fn scale_dispatch<F: Scalar>(out: &mut [F], a: F) {
///         scale(out, a) // an `#[inline(always)]` generic body, or the loop itself
///     }
/// }
/// ```
///
/// The generated function checks each set with `is_x86_feature_detected!` and calls a nested
/// copy of the body marked `#[target_feature(enable = ...)]` (on other architectures, only the
/// plain body exists). A body that calls a helper should mark it `#[inline(always)]`, so that
/// the helper is compiled inside each copy at that copy's width.
///
/// The shapes it accepts: any doc comments and attributes, any visibility; generic
/// parameters (optional) as lifetimes first, then `T: Bound` (one path bound) or
/// `const N: Type`, every one of them inferable from the arguments; parameters as plain
/// `name: Type` (no patterns, no `mut`: rebind inside the body); an optional return type; no
/// `self` (a method forwards to a dispatched free function taking the receiver as an
/// argument).
#[macro_export]
#[doc(hidden)]
macro_rules! dispatch {
    (
        features $([$($feature:tt),+ $(,)?]),+ ;
        $(#[$attr:meta])*
        $vis:vis fn $name:ident
        $(< $($lt:lifetime),* $(,)? $($($param:ident)+ : $bound:path),* $(,)? >)?
        ( $($arg:ident : $ty:ty),* $(,)? ) $(-> $ret:ty)?
        $body:block
    ) => {
        $(#[$attr])*
        #[allow(unsafe_code)]
        $vis fn $name $(< $($lt,)* $($($param)+ : $bound),* >)? ( $($arg : $ty),* ) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                $crate::simd::dispatch!(
                    @variants
                    [$(< $($lt,)* $($($param)+ : $bound),* >)?]
                    ( $($arg : $ty),* )
                    ( $($arg),* )
                    [$(-> $ret)?]
                    $body
                    $([$($feature),+])+
                );
            }
            $body
        }
    };
    // One copy of the body per feature set, each in its own block (the copies share a name).
    (@variants [$($generics:tt)*] $params:tt $args:tt [$($ret:tt)*] $body:block) => {};
    (
        @variants [$($generics:tt)*] $params:tt $args:tt [$($ret:tt)*] $body:block
        [$($feature:tt),+] $($rest:tt)*
    ) => {
        {
            $(#[target_feature(enable = $feature)])+
            fn variant $($generics)* $params $($ret)* $body
            if $(::std::arch::is_x86_feature_detected!($feature))&&+ {
                // SAFETY: the CPU has every feature `variant` is compiled for.
                return unsafe { variant $args };
            }
        }
        $crate::simd::dispatch!(@variants [$($generics)*] $params $args [$($ret)*] $body $($rest)*);
    };
}

pub use crate::dispatch;

/// Defines a function whose body is compiled only for one CPU-feature set, for bodies written
/// with that set's intrinsics (which are safe to call inside it): the function returns
/// `Some` of the body's value where the CPU has every listed feature, else `None` (then the
/// caller takes another route). The body's helpers carry the same `#[target_feature]`.
///
/// ```text
/// crate::simd::require! {
///     features ["avx512f", "fma"];
///     /// What it computes.
///     pub(super) fn products(g: &[f32], out: &mut [f32]) { ... }
/// }
/// ```
///
/// Accepted shapes: as [`dispatch!`]'s, without generic parameters.
#[macro_export]
#[doc(hidden)]
macro_rules! require {
    (
        features [$($feature:tt),+ $(,)?];
        $(#[$attr:meta])*
        $vis:vis fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) $(-> $ret:ty)?
        $body:block
    ) => {
        $(#[$attr])*
        #[allow(unsafe_code)]
        $vis fn $name( $($arg : $ty),* ) -> Option<$crate::simd::require!(@ret $($ret)?)> {
            #[cfg(target_arch = "x86_64")]
            {
                $(#[target_feature(enable = $feature)])+
                fn variant( $($arg : $ty),* ) $(-> $ret)? $body
                if $(::std::arch::is_x86_feature_detected!($feature))&&+ {
                    // SAFETY: the CPU has every feature `variant` is compiled for.
                    return Some(unsafe { variant( $($arg),* ) });
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            {
                let _ = ( $($arg),* );
            }
            None
        }
    };
    (@ret) => { () };
    (@ret $ret:ty) => { $ret };
}

pub use crate::require;
