//! Every raw pointer from C becomes a Rust reference here, and only here:
//! null, misaligned and oversized arguments are refused with a code before
//! any is dereferenced.

use std::mem::{align_of, size_of};

use crate::{ZARIS_ERR_INVALID_ARGUMENT, ZARIS_ERR_NULL};

/// `len` elements of `T` from `ptr`: empty when `len` is 0 (whatever
/// `ptr` is), refused when `ptr` is null or misaligned, or the length
/// cannot be an object's.
pub(crate) fn slice<'a, T>(ptr: *const T, len: usize) -> Result<&'a [T], i32> {
    if len == 0 {
        return Ok(&[]);
    }
    check(ptr, len)?;
    // SAFETY: `ptr` is non-null and aligned (checked), and the caller of
    // the C function promises `len` readable elements there for the call.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// As [`slice`], writable.
pub(crate) fn slice_mut<'a, T>(ptr: *mut T, len: usize) -> Result<&'a mut [T], i32> {
    if len == 0 {
        return Ok(&mut []);
    }
    check(ptr.cast_const(), len)?;
    // SAFETY: non-null and aligned (checked); the caller promises `len`
    // writable elements there, not aliased during the call.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
}

/// The one `T` at `ptr`, to write.
pub(crate) fn out<'a, T>(ptr: *mut T) -> Result<&'a mut T, i32> {
    check(ptr.cast_const(), 1)?;
    // SAFETY: non-null and aligned (checked); the caller promises a
    // writable `T` there, not aliased during the call.
    Ok(unsafe { &mut *ptr })
}

/// The one `T` at `ptr`, to read; `None` for null.
pub(crate) fn input<'a, T>(ptr: *const T) -> Result<Option<&'a T>, i32> {
    if ptr.is_null() {
        return Ok(None);
    }
    check(ptr, 1)?;
    // SAFETY: non-null and aligned (checked); the caller promises a
    // readable, initialised `T` there for the call.
    Ok(Some(unsafe { &*ptr }))
}

fn check<T>(ptr: *const T, len: usize) -> Result<(), i32> {
    if ptr.is_null() {
        return Err(ZARIS_ERR_NULL);
    }
    if !(ptr as usize).is_multiple_of(align_of::<T>())
        || len
            .checked_mul(size_of::<T>())
            .is_none_or(|n| n > isize::MAX as usize)
    {
        return Err(ZARIS_ERR_INVALID_ARGUMENT);
    }
    Ok(())
}

/// A C string of static storage.
pub(crate) fn c_str(s: &'static std::ffi::CStr) -> *const std::ffi::c_char {
    s.as_ptr()
}
