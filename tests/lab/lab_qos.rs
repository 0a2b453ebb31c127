//! The QoS / readiness readers on the lab's real sysfs: `truth.sysfs.{A,B}` is what each
//! VM's kernel shows of rxe0 (GID table with types and netdevs, port state) and of its
//! netdev (MTU); rebuilt as a tree, read by `netcheck`'s readers, and held to what the
//! kernel did: a RoCE v2 GID for the VM's address bound to its netdev, the RoCE MTU
//! rocetap derives from the netdev MTU equal to the path MTU the lab sets up, and no QoS
//! finding where nothing QoS is configured (unknown stays unknown). Learned from it: rxe
//! registers RoCE v2 GIDs only (a link-local one at index 0, the IPv4 one at 1), and the
//! upstream kernel has no `ports/N/active_mtu` file (MLNX_OFED adds one), so netcheck's
//! `active_mtu` is unknown there.

use rocetap::netcheck::model::NetState;
use rocetap::netcheck::sysfs::{read_ports, roce_mtu_for};
use rocetap::netcheck::{qos, sysfs};
use serde_json::Value;

/// Adds the rows of one scenario's sysfs facts to the table (nothing when the truth
/// predates them): `check(what, ok, detail, why)` for what must hold, `info(what, value,
/// why)` for facts.
pub fn rows(
    truth: &Value,
    mut check: impl FnMut(&str, bool, String, &str),
    mut info: impl FnMut(&str, String, &str),
) {
    let Some(vms) = truth["sysfs"].as_object() else {
        return;
    };
    for (vm, files) in vms {
        // One directory per call: the lab's tests run side by side in one process, and a
        // directory shared by two of them was removed under the other's reader.
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("rocetap-lab-sysfs-{}-{n}-{vm}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, content) in files.as_object().into_iter().flatten() {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, format!("{}\n", content.as_str().unwrap_or(""))).unwrap();
        }
        let ip = truth["vms"][vm]["ip"].as_str().unwrap_or("?").to_string();
        let ports: Vec<sysfs::Port> = read_ports(&dir).unwrap_or_default();
        let host = qos::read(&dir, None, &NetState::default(), &ports).unwrap_or_default();
        let p = host.ports.first();
        let v2 = p.and_then(|p| p.gids.v2_ipv4.iter().find(|g| g.address == ip));
        let v1 = p.and_then(|p| p.gids.v1_ipv4.iter().find(|g| g.address == ip));
        check(
            &format!("VM {vm}: RoCE v2 GID of {ip}"),
            v2.is_some(),
            format!("{:?}", p.map(|p| &p.gids.v2_ipv4)),
            "rxe adds a RoCE v2 GID (::ffff:IP) for each IPv4 address of its netdev",
        );
        info(
            &format!("VM {vm}: GID table"),
            format!(
                "v2 IPv4 {:?}, v1 IPv4 {:?}, link-local {:?}, {} all-zero",
                p.map(|p| p.gids.v2_ipv4.iter().map(|g| g.index).collect::<Vec<_>>()),
                v1.map(|g| g.index),
                p.map(|p| p
                    .gids
                    .link_local
                    .iter()
                    .map(|g| g.index)
                    .collect::<Vec<_>>()),
                p.map_or(0, |p| p.gids.zero_entries)
            ),
            "rxe registers RoCE v2 GIDs only",
        );
        let mtu = p.and_then(|p| p.mtu);
        let pmtu = truth["pmtu"].as_u64().map(|x| x as u32);
        check(
            &format!("VM {vm}: RoCE MTU from the netdev MTU"),
            pmtu.is_some() && mtu.and_then(roce_mtu_for) == pmtu,
            format!(
                "netdev MTU {mtu:?} -> {:?}, lab path MTU {pmtu:?}",
                mtu.and_then(roce_mtu_for)
            ),
            "the RoCE MTU is the largest IB MTU that fits the netdev MTU minus the headers",
        );
        info(
            &format!("VM {vm}: active_mtu, netns mode"),
            format!("{:?}, {:?}", p.and_then(|p| p.active_mtu), host.netns_mode),
            "upstream sysfs has no ports/N/active_mtu: unknown, not guessed",
        );
        let mut found = Vec::new();
        qos::host::check(&host, &mut found);
        let ids: Vec<&str> = found
            .iter()
            .map(rocetap::netcheck::found::Found::id)
            .collect();
        check(
            &format!("VM {vm}: no QoS finding"),
            p.is_some() && found.is_empty(),
            format!("{ids:?}"),
            "rxe has no DCB, ECN or configfs QoS state here: unknown, never a finding",
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
