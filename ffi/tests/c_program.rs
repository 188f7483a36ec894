//! The C ABI from C and C++, built with the system compilers against the
//! static library this build made: slots checked against a real
//! `redis-server`'s `CLUSTER KEYSLOT` on thousands of binary, UTF-8 and
//! tagged keys (and their UTF-16 forms), the batch calls, error replies,
//! the retry machine through MOVED, ASK and TRYAGAIN, every error code;
//! then the same program under AddressSanitizer and UBSan, which must
//! report nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use zaris_tests::keys::{keys, server_slots};
use zaris_tests::server_binary;

/// Where cargo put this build's `libzaris_ffi.a`: `cargo test` writes it
/// next to this test's executable (`target/<profile>/deps/`), `cargo build`
/// one level up.
fn static_library() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let deps = exe.parent().expect("target/<profile>/deps/<test>");
    let candidates = [
        deps.to_path_buf(),
        deps.parent().unwrap_or(deps).to_path_buf(),
    ];
    candidates
        .iter()
        .map(|dir| dir.join("libzaris_ffi.a"))
        .find(|lib| lib.exists())
        .unwrap_or_else(|| panic!("libzaris_ffi.a is in neither of {candidates:?}"))
}

/// The vectors file `check.c` reads: each key with the server's slot, and
/// each UTF-8 key again as UTF-16 units.
fn write_vectors(dir: &Path) -> (PathBuf, usize) {
    let keys = keys(6_000);
    let slots = server_slots(&server_binary(), &keys).expect("CLUSTER KEYSLOT");
    let mut out = Vec::new();
    let mut count = 0;
    for (key, slot) in keys.iter().zip(slots) {
        out.push(0u8);
        out.extend_from_slice(&u32::try_from(key.len()).unwrap().to_le_bytes());
        out.extend_from_slice(key);
        out.extend_from_slice(&slot.to_le_bytes());
        count += 1;
        if let Ok(text) = std::str::from_utf8(key) {
            let units: Vec<u16> = text.encode_utf16().collect();
            out.push(1u8);
            out.extend_from_slice(&u32::try_from(units.len()).unwrap().to_le_bytes());
            for unit in units {
                out.extend_from_slice(&unit.to_le_bytes());
            }
            out.extend_from_slice(&slot.to_le_bytes());
            count += 1;
        }
    }
    let path = dir.join("vectors.bin");
    std::fs::write(&path, out).expect("write the vectors");
    (path, count)
}

fn compile(compiler: &str, args: &[&str], sources: &[&Path], out: &Path) {
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let status = Command::new(compiler)
        .args(args)
        .arg("-I")
        .arg(&include)
        .args(sources)
        .arg(static_library())
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(out)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {compiler}: {e} (apt-get install gcc g++)"));
    assert!(status.success(), "{compiler} {args:?} failed");
}

fn run(program: &Path, vectors: &Path) -> (String, String) {
    let output = Command::new(program)
        .arg(vectors)
        .env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
        .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        .output()
        .expect("run the C program");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "{} failed:\n{stdout}\n{stderr}",
        program.display()
    );
    (stdout, stderr)
}

#[test]
fn c_and_cxx_hosts_get_the_servers_slots_and_the_retry_machine() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (vectors, count) = write_vectors(dir.path());
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/check.c");
    let cxx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/cxx.cpp");
    let strict = [
        "-std=c99",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pedantic",
        "-O1",
    ];

    let plain = dir.path().join("check");
    compile("cc", &strict, &[&source], &plain);
    let (stdout, _) = run(&plain, &vectors);
    assert!(stdout.starts_with(&format!("ok: {count} keys")), "{stdout}");

    let sanitized = dir.path().join("check-sanitized");
    let mut args = strict.to_vec();
    args.extend([
        "-g",
        "-fsanitize=address,undefined",
        "-fno-omit-frame-pointer",
        "-fno-sanitize-recover=all",
    ]);
    compile("cc", &args, &[&source], &sanitized);
    let (stdout, stderr) = run(&sanitized, &vectors);
    assert!(stdout.starts_with("ok:"), "{stdout}");
    assert!(
        !stderr.contains("runtime error") && !stderr.contains("Sanitizer"),
        "sanitizers reported:\n{stderr}"
    );

    let cpp = dir.path().join("cxx");
    compile(
        "c++",
        &["-std=c++11", "-Wall", "-Wextra", "-Werror"],
        &[&cxx],
        &cpp,
    );
    let (stdout, _) = run(&cpp, &vectors);
    assert_eq!(stdout.trim(), "ok: C++");
}
