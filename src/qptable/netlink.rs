//! `--qp-table live`: the local node's QP table over RDMA netlink (NETLINK_RDMA), the
//! data `rdma res show qp` prints, without the `rdma` binary. One dump of the devices
//! (RDMA_NLDEV_CMD_GET), then one RDMA_NLDEV_CMD_RES_QP_GET dump per device; command and
//! attribute numbers are those of the kernel's include/uapi/rdma/rdma_netlink.h.

use super::{QpEntry, TableError};
use dissectors::{Psn, Qpn};
use netlink_sys::{Socket, SocketAddr};

/// NETLINK_RDMA.
const NETLINK_RDMA: isize = 20;
/// RDMA_NL_NLDEV, the client of the nldev commands.
const RDMA_NL_NLDEV: u16 = 5;
const CMD_GET: u16 = 1;
const CMD_RES_QP_GET: u16 = 10;
const NLM_F_REQUEST: u16 = 0x01;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;

/// Attribute numbers (enum rdma_nldev_attr).
mod attr {
    pub const DEV_INDEX: u16 = 1;
    pub const DEV_NAME: u16 = 2;
    pub const PORT_INDEX: u16 = 3;
    pub const RES_QP: u16 = 19;
    pub const RES_QP_ENTRY: u16 = 20;
    pub const RES_LQPN: u16 = 21;
    pub const RES_RQPN: u16 = 22;
    pub const RES_RQ_PSN: u16 = 23;
    pub const RES_SQ_PSN: u16 = 24;
    pub const RES_TYPE: u16 = 26;
    pub const RES_STATE: u16 = 27;
    pub const RES_PID: u16 = 28;
    pub const RES_KERN_NAME: u16 = 29;
}

/// Reads the local node's QP table.
pub fn read() -> Result<Vec<QpEntry>, TableError> {
    let err = |why: String| TableError {
        source: "live".into(),
        why,
    };
    let mut sock = Socket::new(NETLINK_RDMA)
        .map_err(|e| err(format!("cannot open a NETLINK_RDMA socket: {e}")))?;
    sock.bind_auto()
        .map_err(|e| err(format!("cannot bind the NETLINK_RDMA socket: {e}")))?;
    sock.connect(&SocketAddr::new(0, 0))
        .map_err(|e| err(format!("cannot reach the kernel over NETLINK_RDMA: {e}")))?;
    let devices =
        dump(&sock, 1, CMD_GET, &[]).map_err(|e| err(format!("listing RDMA devices: {e}")))?;
    let mut out = Vec::new();
    for (i, dev) in devices.iter().enumerate() {
        let attrs = Attrs(dev);
        let Some(index) = attrs.u32(attr::DEV_INDEX) else {
            continue;
        };
        let name = attrs.string(attr::DEV_NAME).unwrap_or_default();
        let mut req = Vec::new();
        put_u32(&mut req, attr::DEV_INDEX, index);
        let msgs = dump(&sock, 2 + i as u32, CMD_RES_QP_GET, &req)
            .map_err(|e| err(format!("reading the QPs of {name}: {e}")))?;
        for m in &msgs {
            entries(&name, m, &mut out);
        }
    }
    Ok(out)
}

/// The QP entries of one RES_QP_GET answer (nested table, or one QP at the top level).
pub(super) fn entries(device: &str, msg: &[u8], out: &mut Vec<QpEntry>) {
    let top = Attrs(msg);
    let device = top
        .string(attr::DEV_NAME)
        .unwrap_or_else(|| device.to_string());
    let port = top.u32(attr::PORT_INDEX);
    if top.get(attr::RES_LQPN).is_some() {
        if let Some(e) = entry(&device, port, top) {
            out.push(e);
        }
    }
    if let Some(table) = top.get(attr::RES_QP) {
        for (t, v) in Attrs(table).iter() {
            if t == attr::RES_QP_ENTRY {
                if let Some(e) = entry(&device, port, Attrs(v)) {
                    out.push(e);
                }
            }
        }
    }
}

fn entry(device: &str, port: Option<u32>, a: Attrs<'_>) -> Option<QpEntry> {
    const TYPES: [&str; 11] = [
        "SMI",
        "GSI",
        "RC",
        "UC",
        "UD",
        "RAW_IPV6",
        "RAW_ETHERTYPE",
        "7",
        "RAW_PACKET",
        "XRC_INI",
        "XRC_TGT",
    ];
    const STATES: [&str; 7] = ["RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"];
    let name = |table: &[&str], v: Option<u8>| match v {
        Some(v) => table
            .get(usize::from(v))
            .map_or_else(|| format!("{v}"), std::string::ToString::to_string),
        None => String::new(),
    };
    Some(QpEntry {
        node: "live".into(),
        addr: None,
        device: device.to_string(),
        port: a.u32(attr::PORT_INDEX).or(port),
        lqpn: Qpn::new(a.u32(attr::RES_LQPN)?),
        rqpn: a.u32(attr::RES_RQPN).map(Qpn::new),
        qp_type: name(&TYPES, a.u8(attr::RES_TYPE)),
        state: name(&STATES, a.u8(attr::RES_STATE)),
        rq_psn: a.u32(attr::RES_RQ_PSN).map(Psn::new),
        sq_psn: a.u32(attr::RES_SQ_PSN).map(Psn::new),
        pid: a.u32(attr::RES_PID),
        comm: a.string(attr::RES_KERN_NAME).or_else(|| {
            let pid = a.u32(attr::RES_PID)?;
            // bounded, regular files only (`sysfile`); the name as the process set it
            let p = std::path::PathBuf::from(format!("/proc/{pid}/comm"));
            let c = crate::sysfile::read(&p, crate::config::limits::SYSFS_FILE_BYTES).ok()?;
            Some(c.trim_end().to_string())
        }),
    })
}

/// A run of netlink attributes (after a message's header).
#[derive(Clone, Copy)]
pub(super) struct Attrs<'a>(pub(super) &'a [u8]);

impl<'a> Attrs<'a> {
    /// (type without the nested / byte-order flags, payload) of each attribute.
    fn iter(self) -> impl Iterator<Item = (u16, &'a [u8])> {
        let mut b = self.0;
        std::iter::from_fn(move || {
            if b.len() < 4 {
                return None;
            }
            let len = usize::from(u16::from_ne_bytes([b[0], b[1]]));
            let t = u16::from_ne_bytes([b[2], b[3]]) & 0x3fff;
            if len < 4 || len > b.len() {
                return None;
            }
            let v = &b[4..len];
            b = b.get((len + 3) & !3..).unwrap_or(&[]);
            Some((t, v))
        })
    }
    fn get(self, t: u16) -> Option<&'a [u8]> {
        self.iter().find(|(x, _)| *x == t).map(|(_, v)| v)
    }
    fn u32(self, t: u16) -> Option<u32> {
        let v = self.get(t)?;
        Some(u32::from_ne_bytes(v.get(..4)?.try_into().ok()?))
    }
    fn u8(self, t: u16) -> Option<u8> {
        self.get(t)?.first().copied()
    }
    fn string(self, t: u16) -> Option<String> {
        let v = self.get(t)?;
        let end = v.iter().position(|&c| c == 0).unwrap_or(v.len());
        Some(String::from_utf8_lossy(&v[..end]).into_owned())
    }
}

pub(super) fn put_u32(buf: &mut Vec<u8>, t: u16, v: u32) {
    buf.extend_from_slice(&8u16.to_ne_bytes());
    buf.extend_from_slice(&t.to_ne_bytes());
    buf.extend_from_slice(&v.to_ne_bytes());
}

/// Sends one dump request of nldev command `cmd` and returns each answer's attributes.
fn dump(sock: &Socket, seq: u32, cmd: u16, attrs: &[u8]) -> std::io::Result<Vec<Vec<u8>>> {
    let len = 16 + attrs.len();
    let mut req = Vec::with_capacity(len);
    req.extend_from_slice(&(len as u32).to_ne_bytes());
    req.extend_from_slice(&((RDMA_NL_NLDEV << 10) + cmd).to_ne_bytes());
    req.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    req.extend_from_slice(&seq.to_ne_bytes());
    req.extend_from_slice(&0u32.to_ne_bytes());
    req.extend_from_slice(attrs);
    sock.send(&req, 0)?;
    let mut out = Vec::new();
    loop {
        let (data, _) = sock.recv_from_full()?;
        if data.is_empty() {
            return Ok(out);
        }
        let mut off = 0;
        while off + 16 <= data.len() {
            let h = &data[off..];
            let mlen = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]) as usize;
            let mtype = u16::from_ne_bytes([h[4], h[5]]);
            if mlen < 16 || off + mlen > data.len() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "netlink message length outside the datagram",
                ));
            }
            match mtype {
                NLMSG_DONE => return Ok(out),
                NLMSG_ERROR if mlen >= 20 => {
                    let code = i32::from_ne_bytes([h[16], h[17], h[18], h[19]]);
                    if code != 0 {
                        return Err(std::io::Error::from_raw_os_error(-code));
                    }
                }
                NLMSG_ERROR => {}
                _ => out.push(h[16..mlen].to_vec()),
            }
            off += (mlen + 3) & !3;
        }
    }
}
