//! The words of RoCE readiness (`roce-*`): GIDs, MTUs, ECN and error counters of each
//! RDMA port, with the sysfs files that show them.

use super::{ev, Words};
use crate::netcheck::host::sysfs::{EcnRole, Roce};

/// `/sys/class/infiniband/DEV/ports/N`.
fn port_dir(device: &str, port: &str) -> String {
    format!("/sys/class/infiniband/{device}/ports/{port}")
}

pub(super) fn words(r: &Roce) -> Words {
    match r {
        Roce::NoNetdev { device, port } => Words::new(
            format!("{device} port {port} has no GID bound to a netdev: no RoCE traffic can use it"),
            format!("{}/gid_attrs/ndevs/* names no network device.", port_dir(device, port)),
            Vec::new(),
            vec!["check that the netdev of this port is up and has an address".into()],
        ),
        Roce::NoGid {
            device,
            port,
            netdev: nd,
            addr,
            prefix_len,
            present,
        } => {
            let (name, pd) = (format!("{device} port {port}"), port_dir(device, port));
            Words::new(
                format!("{addr} on {nd} has no RoCE v2 GID on {name}: RDMA connections to it fail"),
                format!("RoCE v2 addresses a peer by a GID ::ffff:{addr} of type \"RoCE v2\"; the GID table of {name} has none for it (the address was added after the GID table was filled, or the port's RoCE mode is v1 only)."),
                present
                    .iter()
                    .map(|g| ev(format!("{pd}/gids/{}", g.index), format!("{} ({})", g.gid, g.kind)))
                    .collect(),
                vec![
                    format!("check `cat {pd}/gid_attrs/types/*` and the RoCE mode (cma_roce_mode -d {device} -p {port})"),
                    format!("re-add the address: ip addr del {addr}/{prefix_len} dev {nd} && ip addr add {addr}/{prefix_len} dev {nd}"),
                ],
            )
        }
        Roce::MtuMismatch {
            device,
            port,
            netdev: nd,
            active,
            mtu,
            carries,
        } => Words::new(
            format!(
                "{device} port {port} runs RoCE MTU {active}, but {nd} (MTU {mtu}) carries {}",
                carries.map_or("no RoCE MTU".to_string(), |b| b.to_string())
            ),
            "RoCE picks the largest IB MTU (256..4096) that fits the netdev MTU minus 96 bytes of headers; a different active_mtu means the netdev MTU changed after the port came up, or the peer or switch limits it.".into(),
            vec![ev(format!("{}/active_mtu", port_dir(device, port)), active.to_string())],
            vec![format!("make the netdev MTU match end to end (e.g. ip link set {nd} mtu 9000 on both ends and the switch), then restart the port or the application")],
        ),
        Roce::MtuSmall {
            netdev: nd,
            active,
            mtu,
        } => Words::new(
            format!("{nd} MTU {mtu} limits RoCE to {active}-byte packets; jumbo frames (MTU >= 4200) allow 4096"),
            "Smaller RoCE MTUs cost throughput on large transfers.".into(),
            Vec::new(),
            vec![format!("ip link set {nd} mtu 9000 (and on every hop)")],
        ),
        Roce::EcnOff {
            netdev: nd,
            role,
            prios: off,
        } => {
            let which = role.dir();
            let role = match role {
                EcnRole::Np => "notification point (receiver sends CNPs)",
                EcnRole::Rp => "reaction point (sender slows down on CNPs)",
            };
            Words::new(
                format!("ECN {which} is disabled on {nd} for priorities {}: no DCQCN congestion control there", off.join(",")),
                format!("The {role} is off for those priorities, so congestion marks are ignored and the fabric relies on PFC alone."),
                off.iter().map(|p| ev(format!("/sys/class/net/{nd}/ecn/{which}/enable/{p}"), "0")).collect(),
                off.iter().map(|p| format!("echo 1 > /sys/class/net/{nd}/ecn/{which}/enable/{p}")).collect(),
            )
        }
        Roce::Counters {
            device,
            port,
            counters: bad,
        } => Words::new(
            format!(
                "{device} port {port} error counters are not zero: {}",
                bad.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
            ),
            "Sequence errors and ACK timeouts mean lost or reordered RoCE packets (usually drops without PFC/ECN, or a path MTU problem); capture with `rocetap capture` to see which queue pairs.".into(),
            bad.iter()
                .map(|(k, v)| ev(format!("{}/hw_counters/{k}", port_dir(device, port)), v.to_string()))
                .collect(),
            vec!["find the lossy hop: check PFC/ECN on the switch ports and the NIC (mlnx_qos), then compare counters again".into()],
        ),
    }
}
