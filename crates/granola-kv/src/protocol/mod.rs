//! Wire protocols.
