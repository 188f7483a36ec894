//! Why a command line has no target ([`CommandError`]): nothing the
//! servers would take, so a router sends nothing.

use core::fmt;

/// Why a command line has no target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommandError {
    /// No command name at all.
    Empty,
    /// Neither server knows the command.
    UnknownCommand,
    /// The command knows no such subcommand (`OBJECT NOSUCH`).
    UnknownSubcommand,
    /// Not the number of arguments the command takes.
    WrongArity {
        /// `n`: exactly `n` arguments (the name included); `-n`: at least.
        arity: i8,
        /// How many were given (the name included).
        given: usize,
    },
    /// The arguments do not say which keys (a `numkeys` that is not a
    /// number, or larger than the arguments; `XREAD` without `STREAMS`):
    /// the server would refuse the command, so nothing is sent.
    InvalidArguments,
    /// The keys hash to different slots: no one node can run the command.
    CrossSlot {
        /// The first key's slot.
        first: u16,
        /// The first slot that differs from it.
        second: u16,
    },
    /// A learned command whose description cannot say which arguments are
    /// keys (a spec `incomplete`, flags that vary with the arguments): the
    /// server can, through `COMMAND GETKEYS`.
    KeysNotDescribed,
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CommandError::Empty => f.write_str("empty command"),
            CommandError::UnknownCommand => f.write_str("unknown command"),
            CommandError::UnknownSubcommand => f.write_str("unknown subcommand"),
            CommandError::WrongArity { arity, given } if arity >= 0 => {
                write!(f, "wrong number of arguments: {given} given, {arity} expected (the name included)")
            }
            CommandError::WrongArity { arity, given } => write!(
                f,
                "wrong number of arguments: {given} given, at least {} expected (the name included)",
                -i16::from(arity)
            ),
            CommandError::InvalidArguments => {
                f.write_str("the arguments do not say which keys (a bad numkeys, or a missing keyword)")
            }
            CommandError::CrossSlot { first, second } => write!(
                f,
                "the keys hash to different slots ({first} and {second}): no one node can run the command"
            ),
            CommandError::KeysNotDescribed => f.write_str("keys not in the command's specs"),
        }
    }
}

impl core::error::Error for CommandError {}
