//! QoS findings from the host alone: RDMA-CM in RoCE v1 mode, RDMA-CM's ToS or the
//! device's global traffic class on a priority without PFC while another has it, CNPs on
//! a priority without PFC, no PFC at all, a VF whose netdev MTU holds the RoCE MTU below
//! what its PF carries. Nothing is said about a value that is unknown. (Each netdev's
//! GID indices are facts, not findings: the JSON `qos` block and the text summary.)

use super::found::{Qos, TosSource};
use super::{HostQos, PortQos};
use crate::netcheck::found::Found;
use crate::netcheck::host::sysfs::Roce;
use crate::netcheck::sysfs::roce_mtu_for;

/// Where DSCP `d` goes and why that is lossy: `Some((prio, PFC priorities))` when the
/// DSCP's priority is known, PFC is enabled somewhere, and not on that priority.
pub(crate) fn lossy(p: &PortQos, d: u8, pcp: Option<u8>) -> Option<(u8, Vec<u8>)> {
    let prio = p.prio_of(d, pcp)?;
    let on = p.pfc_on()?;
    (!on.is_empty() && !on.contains(&prio)).then_some((prio, on))
}

/// The ToS byte that puts traffic on the lossless class: its DSCP, ECT(0).
pub(crate) fn lossless_tos(p: &PortQos) -> Option<u8> {
    p.lossless_dscp().map(|d| d << 2 | 2)
}

/// The host-only QoS findings of every port. (`out` holds the findings so far: the
/// PF-MTU finding replaces the RoCE MTU note of the same netdev, saying more.)
pub fn check(h: &HostQos, out: &mut Vec<Found<'_>>) {
    for p in &h.ports {
        roce_mode(p, out);
        tos(p, out);
        cnp(p, out);
        mtu_pf(p, out);
        if p.pfc_on().is_some_and(|v| v.is_empty()) {
            out.push(Found::Qos(Qos::PfcNone {
                port: Box::new(p.clone()),
            }));
        }
    }
}

fn roce_mode(p: &PortQos, out: &mut Vec<Found<'_>>) {
    let Some(mode) = &p.default_roce_mode else {
        return;
    };
    if mode.contains("v2") {
        return;
    }
    out.push(Found::Qos(Qos::RoceMode {
        port: Box::new(p.clone()),
        mode: mode.clone(),
    }));
}

fn tos(p: &PortQos, out: &mut Vec<Found<'_>>) {
    for (source, value) in [
        (TosSource::CmDefault, p.default_roce_tos),
        (TosSource::DeviceClass, p.traffic_class),
    ] {
        let Some(tos) = value else {
            continue;
        };
        let Some((prio, on)) = lossy(p, tos >> 2, None) else {
            continue;
        };
        out.push(Found::Qos(Qos::Tos {
            port: Box::new(p.clone()),
            source,
            tos,
            prio,
            pfc_on: on,
        }));
    }
}

fn cnp(p: &PortQos, out: &mut Vec<Found<'_>>) {
    let Some(d) = p.cnp_dscp else {
        return;
    };
    let Some((prio, on)) = lossy(p, d, p.cnp_802p_prio) else {
        return;
    };
    out.push(Found::Qos(Qos::Cnp {
        port: Box::new(p.clone()),
        dscp: d,
        prio,
        pfc_on: on,
    }));
}

fn mtu_pf(p: &PortQos, out: &mut Vec<Found<'_>>) {
    let (Some(mtu), Some(pf), Some(pf_mtu)) = (p.mtu, &p.pf, p.pf_mtu) else {
        return;
    };
    let (have, could) = (roce_mtu_for(mtu), roce_mtu_for(pf_mtu));
    let active = p.active_mtu.or(have);
    let (Some(active), Some(could)) = (active, could) else {
        return;
    };
    if active >= could {
        return;
    }
    // This says why, and what to set, where the MTU note only says that.
    out.retain(|f| !matches!(f, Found::Roce(Roce::MtuSmall { netdev, .. }) if *netdev == p.netdev));
    out.push(Found::Qos(Qos::MtuPf {
        port: Box::new(p.clone()),
        active,
        mtu,
        pf: pf.clone(),
        pf_mtu,
        could,
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(netdev: &str) -> Found<'static> {
        Found::Roce(Roce::MtuSmall {
            netdev: netdev.into(),
            active: 1024,
            mtu: 1500,
        })
    }

    #[test]
    fn the_pf_mtu_finding_replaces_the_mtu_note_of_its_netdev_only() {
        let port = PortQos {
            device: "mlx5_2".into(),
            port: "1".into(),
            netdev: "net1".into(),
            mtu: Some(1500),
            active_mtu: Some(1024),
            pf: Some("ens1f0np0".into()),
            pf_mtu: Some(9000),
            ..PortQos::default()
        };
        let h = HostQos {
            ports: vec![port],
            ..HostQos::default()
        };
        let mut out = vec![small("net1"), small("net10")];
        check(&h, &mut out);
        let ids: Vec<&str> = out.iter().map(Found::id).collect();
        assert_eq!(ids, ["roce-mtu", "qos-mtu-pf"]);
        assert!(matches!(&out[0], Found::Roce(Roce::MtuSmall { netdev, .. }) if netdev == "net10"));
        assert!(matches!(
            &out[1],
            Found::Qos(Qos::MtuPf {
                active: 1024,
                could: 4096,
                pf_mtu: 9000,
                ..
            })
        ));
    }
}
