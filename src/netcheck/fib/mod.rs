//! The kernel's routing model of one network namespace and how it is loaded: the state
//! itself (`model`: links, addresses, routes of every table, policy rules, sysctls), read
//! live over rtnetlink (`netlink`) or offline from `ip -j` dumps (`load_json`), and the
//! kernel's route selection computed from it (`lookup`).

pub mod load_json;
pub mod lookup;
pub mod model;
pub mod netlink;
