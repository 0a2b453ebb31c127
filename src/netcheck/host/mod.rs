//! The host's RoCE side: readiness from sysfs (`sysfs`: RDMA ports, GIDs, MTUs, ECN,
//! error counters), its QoS state and findings (`qos`), and the recorded DCB tool
//! outputs that state may come from (`dcb`).

pub mod dcb;
pub mod qos;
pub mod sysfs;
