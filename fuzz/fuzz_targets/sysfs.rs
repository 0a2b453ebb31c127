//! Fuzz target: the sysfs readers (RDMA devices, ports, GIDs, counters, netdev MTUs, QoS)
//! on a tree whose files hold arbitrary bytes. They must never panic: a file that does
//! not parse is unknown, never a guess.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocetap::capture::rdma;
use rocetap::netcheck::sysfs::read_ports;
use std::fs;
use std::path::Path;

/// Files the readers look at, relative to the sysfs root; the input is split on 0xff
/// bytes and each piece written to the next file.
const FILES: [&str; 20] = [
    "class/infiniband/mlx5_0/ports/1/state",
    "class/infiniband/mlx5_0/ports/1/phys_state",
    "class/infiniband/mlx5_0/ports/1/active_mtu",
    "class/infiniband/mlx5_0/ports/1/link_layer",
    "class/infiniband/mlx5_0/ports/1/gids/0",
    "class/infiniband/mlx5_0/ports/1/gid_attrs/types/0",
    "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0",
    "class/infiniband/mlx5_0/ports/1/counters/port_rcv_data",
    "class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence",
    "class/infiniband/mlx5_0/device/net/eth0/mtu",
    "class/net/eth0/mtu",
    "class/infiniband/mlx5_0/node_guid",
    // The QoS reader (netcheck::qos): ECN, CNP, traffic class, RDMA-CM, PF, netns mode.
    "class/net/eth0/ecn/roce_np/enable/3",
    "class/net/eth0/ecn/roce_rp/enable/3",
    "class/net/eth0/ecn/roce_np/cnp_dscp",
    "class/net/eth0/device/physfn/net/pf0/mtu",
    "class/infiniband/mlx5_0/tc/1/traffic_class",
    "kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_mode",
    "kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos",
    "module/ib_core/parameters/netns_mode",
];

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("rocetap-fuzz-sysfs-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    for (name, content) in FILES.iter().zip(data.split(|&b| b == 0xff)) {
        let p = dir.join(name);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, content).unwrap();
    }
    let root: &Path = &dir;
    if let Ok(ports) = read_ports(root) {
        let st = rocetap::netcheck::model::NetState::default();
        let _ = rocetap::netcheck::qos::read(root, None, &st, &ports);
    }
    for dev in rdma::list(root) {
        let _ = rdma::device(root, &dev.name);
        let _ = rdma::read_counters(&rdma::counters_dir(root, &dev.name, 1));
    }
    let _ = rdma::parse_name(root, "mlx5_0:1");
    let _ = fs::remove_dir_all(&dir);
});
