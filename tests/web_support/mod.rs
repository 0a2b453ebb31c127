//! Helpers of `tests/agent/agent_tls.rs`: test certificates (rcgen), curl over HTTPS, the web
//! config and Prometheus' scrape config of the TLS setup, start-up errors.

#![allow(dead_code)]

use crate::common::{bin, TempDir};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Test certificates: a CA, the server's (for 127.0.0.1), a client's it signed, and a
/// client's another CA signed.
pub struct Pki {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    pub stranger_cert: PathBuf,
    pub stranger_key: PathBuf,
}

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, name);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    CertifiedIssuer::self_signed(p, KeyPair::generate().unwrap()).unwrap()
}

fn leaf(
    issuer: &CertifiedIssuer<'static, KeyPair>,
    names: &[&str],
    usage: ExtendedKeyUsagePurpose,
) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(
        names
            .iter()
            .map(std::string::ToString::to_string)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    p.distinguished_name.push(DnType::CommonName, names[0]);
    p.extended_key_usages = vec![usage];
    let cert = p.signed_by(&key, issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

pub fn pki(tmp: &TempDir) -> Pki {
    let root = ca("rocetap test CA");
    let other = ca("someone else's CA");
    let (cert, key) = leaf(
        &root,
        &["rocetap.rocetap.svc", "127.0.0.1", "localhost"],
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    let (ccert, ckey) = leaf(&root, &["prometheus"], ExtendedKeyUsagePurpose::ClientAuth);
    let (scert, skey) = leaf(&other, &["prometheus"], ExtendedKeyUsagePurpose::ClientAuth);
    let write = |name: &str, text: &str| {
        let p = tmp.path(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    Pki {
        ca: write("ca.crt", &root.pem()),
        cert: write("tls.crt", &cert),
        key: write("tls.key", &key),
        client_cert: write("client.crt", &ccert),
        client_key: write("client.key", &ckey),
        stranger_cert: write("stranger.crt", &scert),
        stranger_key: write("stranger.key", &skey),
    }
}

/// `curl` over HTTPS: (status or `None` when no HTTP answer, the response head + body).
pub fn curl(pki: &Pki, port: u16, path: &str, args: &[&str]) -> (Option<u16>, String) {
    let o = Command::new("curl")
        .args(["-sS", "-i", "--max-time", "30", "--cacert"])
        .arg(&pki.ca)
        .args(args)
        .arg(format!("https://127.0.0.1:{port}{path}"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok());
    (
        status.filter(|_| o.status.success()),
        text + &String::from_utf8_lossy(&o.stderr),
    )
}

pub const USER: &str = "prometheus";
pub const PASSWORD: &str = "s3cret scrape";

/// A web config requiring a client certificate of our CA and `USER`'s password.
pub fn web_config(tmp: &TempDir, pki: &Pki) -> PathBuf {
    let hash = bcrypt::hash(PASSWORD, 4).unwrap();
    let p = tmp.path("web.yml");
    std::fs::write(
        &p,
        format!(
            "tls_server_config:\n  cert_file: {}\n  key_file: {}\n  client_ca_file: {}\n  client_auth_type: RequireAndVerifyClientCert\n  min_version: TLS12\nhttp_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\nbasic_auth_users:\n  {USER}: '{hash}'\n  other: '{}'\n",
            pki.cert.display(),
            // relative to the web config's directory, as the toolkit takes it
            "tls.key",
            pki.ca.display(),
            bcrypt::hash("other", 4).unwrap()
        ),
    )
    .unwrap();
    p
}

/// deploy/prometheus/scrape-tls.yml's static job, with the test's files and agent (Debian's
/// Prometheus has no Kubernetes discovery: the pod job is left out) and a 1 s interval.
pub fn scrape_tls_config(pki: &Pki, password: &Path, port: u16) -> String {
    use yaml_rust2::{Yaml, YamlEmitter, YamlLoader};
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy/prometheus/scrape-tls.yml"),
    )
    .unwrap();
    let mut text = text;
    for (from, to) in [
        (
            "/etc/prometheus/rocetap/ca.crt",
            pki.ca.display().to_string(),
        ),
        (
            "/etc/prometheus/rocetap/tls.crt",
            pki.client_cert.display().to_string(),
        ),
        (
            "/etc/prometheus/rocetap/tls.key",
            pki.client_key.display().to_string(),
        ),
        (
            "/etc/prometheus/rocetap/password",
            password.display().to_string(),
        ),
        ("192.0.2.10:9470", format!("127.0.0.1:{port}")),
        ("scrape_interval: 15s", "scrape_interval: 1s".into()),
        ("scrape_timeout: 10s", "scrape_timeout: 1s".into()),
    ] {
        assert!(text.contains(from), "scrape-tls.yml no longer has {from}");
        text = text.replace(from, &to);
    }
    assert!(text.contains(&format!("username: {USER}")), "{text}");
    let mut doc = YamlLoader::load_from_str(&text).unwrap().remove(0);
    let key = Yaml::String("scrape_configs".into());
    let Yaml::Hash(h) = &mut doc else { panic!() };
    let Some(Yaml::Array(jobs)) = h.get_mut(&key) else {
        panic!()
    };
    jobs.retain(|j| j["job_name"].as_str() == Some("rocetap-static"));
    assert_eq!(jobs.len(), 1);
    let mut out = String::new();
    YamlEmitter::new(&mut out).dump(&doc).unwrap();
    out
}

/// `rocetap agent ARGS` must fail at start: exit 2 and exactly one `rocetap:` line.
pub fn refused(args: &[&str]) -> String {
    let o = Command::new(bin())
        .arg("agent")
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.starts_with("rocetap: "), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    err
}
