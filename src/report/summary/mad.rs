//! The summary of a MAD: `CM ConnectRequest LocalQPN=0x00003d StartPSN=8176132
//! ServiceID=0x0000000001064853 (TCP port 18515) 10.1.16.62:52471 → 10.1.16.61`, a CM
//! reject's reason in red, and `MAD SubnAdm GetTable attr=0x0035` for other classes.

use crate::report::style::{Paint, Tone};
use dissectors::cm::{mtu_bytes, CmMsg, ReqRepr, ServiceId};
use dissectors::Mad;
use std::fmt::Write as _;

/// Appends the MAD's summary to `out`.
pub(super) fn describe(m: &Mad, out: &mut String, paint: Paint) {
    let Some(msg) = m.cm else {
        let cls = if m.hdr.mgmt_class == dissectors::mad::CLASS_CM {
            dissectors::cm::attr_name(m.hdr.attr_id)
        } else {
            m.hdr.class_name()
        };
        let _ = write!(
            out,
            "MAD {cls} {} attr=0x{:04x} TID=0x{:x}",
            m.hdr.method_name(),
            m.hdr.attr_id,
            m.hdr.tid
        );
        if m.hdr.status != 0 {
            let _ = write!(out, " Status=0x{:04x}", m.hdr.status);
        }
        return;
    };
    let _ = write!(out, "CM {}", msg.name());
    match msg {
        CmMsg::Req(r) => req(&r, out),
        CmMsg::Rep(r) => {
            let _ = write!(
                out,
                " LocalQPN={} StartPSN={} CommID=0x{:08x}→0x{:08x}",
                r.local_qpn, r.start_psn.0, r.ids.local, r.ids.remote
            );
        }
        CmMsg::Rej(r) => {
            out.push(' ');
            paint.wrap(out, Some(Tone::Bad), |o| {
                let _ = write!(o, "({}, reason {})", r.reason.name(), r.reason.0);
            });
            let what = match r.msg_rejected {
                0 => "REQ",
                1 => "REP",
                _ => "none",
            };
            let _ = write!(
                out,
                " of {what} CommID=0x{:08x}→0x{:08x}",
                r.ids.local, r.ids.remote
            );
        }
        CmMsg::Mra(r) => {
            let what = match r.message_mraed {
                0 => "REQ",
                1 => "REP",
                2 => "LAP",
                _ => "reserved",
            };
            let _ = write!(
                out,
                " of {what} ServiceTimeout={} CommID=0x{:08x}→0x{:08x}",
                r.service_timeout, r.ids.local, r.ids.remote
            );
        }
        CmMsg::Rtu(r) | CmMsg::Drep(r) => {
            let _ = write!(out, " CommID=0x{:08x}→0x{:08x}", r.local, r.remote);
        }
        CmMsg::Dreq(r) => {
            let _ = write!(
                out,
                " RemoteQPN={} CommID=0x{:08x}→0x{:08x}",
                r.remote_qpn, r.ids.local, r.ids.remote
            );
        }
        CmMsg::SidrReq(r) => {
            out.push(' ');
            service(r.service_id, out);
            let _ = write!(out, " RequestID=0x{:08x}", r.request_id);
        }
        CmMsg::SidrRep(r) => {
            let _ = write!(
                out,
                " ({}) QPN={} QKey=0x{:08x} RequestID=0x{:08x}",
                r.status_name(),
                r.qpn,
                r.qkey,
                r.request_id
            );
        }
        CmMsg::Lap(r) => {
            let _ = write!(
                out,
                " RemoteQPN={} CommID=0x{:08x}→0x{:08x}",
                r.remote_qpn, r.ids.local, r.ids.remote
            );
        }
        CmMsg::Apr(r) => {
            let _ = write!(
                out,
                " Status={} CommID=0x{:08x}→0x{:08x}",
                r.ap_status, r.ids.local, r.ids.remote
            );
        }
    }
}

/// `ServiceID=0x.. (TCP port 18515)`.
fn service(s: ServiceId, out: &mut String) {
    let _ = write!(out, "ServiceID=0x{:016x}", s.0);
    if let Some((proto, port)) = s.rdma_ip_port() {
        match ServiceId::port_space_name(proto) {
            Some(n) => {
                let _ = write!(out, " ({n} port {port})");
            }
            None => {
                let _ = write!(out, " (port space 0x{proto:02x} port {port})");
            }
        }
    }
}

fn req(r: &ReqRepr, out: &mut String) {
    let _ = write!(out, " LocalQPN={} StartPSN={} ", r.local_qpn, r.start_psn.0);
    service(r.service_id, out);
    if let Some(ip) = &r.ip {
        let _ = write!(out, " {}:{} → {}", ip.src, ip.src_port, ip.dst);
    }
    if let Some(mtu) = mtu_bytes(r.path_mtu) {
        let _ = write!(out, " MTU={mtu}");
    }
    let _ = write!(
        out,
        " TClass={} Retry={} RNRRetry={} CommID=0x{:08x}",
        r.primary.traffic_class, r.retry_count, r.rnr_retry, r.local_comm_id
    );
}
