//! Connections to nodes: dialing (TCP, TLS, credentials, the handshake)
//! in [`dial`]; the multiplexed connection ([`connection`]), the state its
//! callers share with its task ([`shared`]: reply slots, the queue, the
//! reading half), what a request is to it ([`slot`]), its side of a
//! pause ([`watch`]) and the task ([`driver`]); and what can go wrong with
//! any of them, [`ConnError`] (`error`).

mod connection;
mod dial;
mod driver;
mod error;
mod shared;
mod slot;
mod watch;

pub(crate) use connection::{Connection, Stream};
pub use dial::Credentials;
pub(crate) use dial::{authenticate, connect, open, AddressMap, ConnOptions, CredentialsSource};
pub(crate) use error::ConnError;
pub(crate) use slot::{PushSink, SlotKind, Watch, WriteTo, FAR};
