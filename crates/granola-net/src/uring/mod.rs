//! The io_uring datapath: a completion-based event loop behind the same
//! [`Service`](crate::server::Service) / [`Session`](crate::server::Session)
//! traits as the epoll one.

mod probe;

pub(crate) use probe::probe;
