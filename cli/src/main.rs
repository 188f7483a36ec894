//! `zaris`: for people who operate Redis and Valkey clusters. Which node
//! owns a key, where a command must go, whether every node agrees on the
//! map, and ownership changes as they happen, from the same core and
//! client as the rest of Zaris.
//!
//! Output is a table for people and `--json` for scripts. Exit status: 0
//! when all is well, 1 when the answer is "no" (a command no one node can
//! run, a cluster whose nodes disagree), 2 when the question could not be
//! answered (bad arguments, no node reachable).

mod connect;
mod map;
mod route;
mod show;
mod slot;
mod watch;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Which node of a Redis or Valkey cluster owns a key, where a command
/// must go, and whether every node agrees.
#[derive(Parser)]
#[command(name = "zaris", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log what the client does to stderr (-v: info, -vv: debug; or set RUST_LOG).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
}

#[derive(Subcommand)]
enum Command {
    /// The slot of each key, the bytes hashed, and the owner with --seed;
    /// with --stdin, counts per node and slot, the imbalance and hot tags.
    Slot(slot::Args),
    /// The keys of a command, their slots, and where it must go (or why no
    /// one node can run it). Give the command after `--`.
    Route(route::Args),
    /// The map as the client builds it, each node's own view beside it,
    /// where they disagree, and which slots are uncovered or migrating.
    /// Exits 1 when the cluster is inconsistent.
    Map(map::Args),
    /// Every ownership change as the client sees it, live, until Ctrl-C.
    Watch(watch::Args),
}

/// What a subcommand ends with: a status, or a failure to tell.
pub(crate) type Outcome = Result<ExitCode, connect::Failure>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logs(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("zaris: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::Slot(args) => slot::run(args).await,
            Command::Route(args) => route::run(args).await,
            Command::Map(args) => map::run(args).await,
            Command::Watch(args) => watch::run(args).await,
        }
    });
    match outcome {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("zaris: {failure}");
            ExitCode::from(2)
        }
    }
}

/// Logs to stderr: warnings by default, more with -v, or what `RUST_LOG` says.
fn init_logs(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
