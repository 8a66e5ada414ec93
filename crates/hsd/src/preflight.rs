//! What can be checked before serving, in one place: `hsd check` prints all
//! of it (`check`); `hsd serve` runs `before_serving` on the settings it
//! resolved and refuses to start on its first error, logging its warnings,
//! so both say the same words. The settings themselves (ranges, secrets,
//! TLS files, the data directory) are checked while they are read
//! (`ServeOptions::resolve`), whose error `hsd check` prints as its one
//! finding; the MySQL servers' login is checked by the backend's start
//! with the words of `hsd_mysql::preflight`.

use crate::config::{BackendChoice, Config};
use hsd_mysql::preflight as mysql_preflight;
pub use hsd_storage::finding::{one_line, Finding, Severity};
use std::io::ErrorKind;
use std::net::TcpListener;

/// What `hsd serve` checks once its settings are read, before it starts
/// anything: warnings to log and errors that stop it.
pub fn before_serving(config: &Config) -> Vec<Finding> {
    let mut found = Vec::new();
    if let Some(warning) = config.unprotected_port() {
        found.push(Finding::warning(warning));
    }
    if let Some(warning) = config.data_disk_full() {
        found.push(Finding::warning(warning));
    }
    for warning in config.secrets_exposed() {
        found.push(Finding::warning(warning.clone()));
    }
    if config.demo && config.backend != BackendChoice::Embedded {
        found.push(Finding::error("--demo works with the embedded store only"));
    }
    found.extend(ports(config));
    found
}

/// Everything `hsd check` reports on settings that were read without
/// error: `before_serving`, what the reading checked, and the MySQL
/// servers with the account's privileges.
pub async fn check(config: &Config) -> Vec<Finding> {
    let mut found = vec![Finding::ok(format!(
        "settings read: backend {}, read port {}:{}, write port {}:{}",
        config.backend, config.address, config.port, config.address, config.port_wr
    ))];
    // SAFETY: geteuid only reads the process's user id.
    if unsafe { libc::geteuid() } == 0 {
        found.push(Finding::note(
            "checked as root, who may write where the service's user may not: to check as \
             the service runs, run it as that user (runuser -u hsd -- hsd check ...)",
        ));
    }
    if config.backend == BackendChoice::Embedded && config.data_dir_missing() {
        found.push(Finding::ok(format!(
            "data directory {} does not exist yet: hsd serve would create it (nothing was \
             created now)",
            config.data_dir.display()
        )));
    } else if config.backend == BackendChoice::Embedded && config.data_disk_full().is_none() {
        found.push(Finding::ok(format!(
            "data directory {} is writable, and so are its db files",
            config.data_dir.display()
        )));
    }
    if let Some(tls) = &config.tls {
        found.push(Finding::ok(format!(
            "TLS certificate {} and key {} load and make a pair",
            tls.cert.display(),
            tls.key.display()
        )));
    }
    found.extend(before_serving(config));
    if let BackendChoice::Mysql(url) = &config.backend {
        found.extend(mysql_preflight::check(&config.mysql_settings(url)).await);
    }
    if config.memcached.is_some() {
        found.push(memcached_containers(config).await);
    }
    found
}

/// With `--memcached-address`: the containers read and judged as `hsd
/// serve` reads them (`memcached::read_containers`), its refusal in its
/// words. Nothing is created: the embedded store's db files are opened
/// only where they exist.
async fn memcached_containers(config: &Config) -> Finding {
    let Some(settings) = &config.memcached else {
        return Finding::note("no --memcached-address");
    };
    let catalog = crate::exec::Catalog::default();
    let row_cache = config.row_cache.is_some();
    let read = match &config.backend {
        BackendChoice::Embedded if config.data_dir_missing() => {
            return Finding::note(
                "--memcached-address: the containers' tables were not read: the data \
                 directory does not exist yet",
            )
        }
        BackendChoice::Embedded => {
            let backend = hsd_sqlite::SqliteBackend::new(&config.data_dir, config.synchronous);
            crate::memcached::read_containers(settings, &backend, &catalog, row_cache).await
        }
        BackendChoice::Mysql(url) => {
            // The server as serve would use it, without the row cache's
            // reader (its settings are judged above).
            let mut mysql = config.mysql_settings(url);
            mysql.row_cache = None;
            match hsd_mysql::MysqlBackend::start(mysql, &prometheus::Registry::new()).await {
                Ok(backend) => {
                    crate::memcached::read_containers(settings, &backend, &catalog, row_cache).await
                }
                Err(_) => {
                    return Finding::note(
                        "--memcached-address: the containers' tables were not read: the \
                         server could not be used (above)",
                    )
                }
            }
        }
    };
    match read {
        Ok((containers, _)) => {
            let names: Vec<String> = containers
                .list
                .iter()
                .map(|c| String::from_utf8_lossy(&c.name).into_owned())
                .collect();
            Finding::ok(format!(
                "--memcached-address: {} container{} read ({}), the default {}",
                names.len(),
                if names.len() == 1 { "" } else { "s" },
                names.join(", "),
                names.get(containers.default).map_or("none", String::as_str)
            ))
        }
        Err(e) => Finding::error(one_line(&format!("{e:#}"))),
    }
}

/// Each listener's address is free to bind now (port 0: any free port,
/// nothing to check), and no two share a port.
fn ports(config: &Config) -> Vec<Finding> {
    let mut wanted = vec![
        ("read port (--port)", config.address.clone(), config.port),
        (
            "write port (--port-wr)",
            config.address.clone(),
            config.port_wr,
        ),
    ];
    if let Some(admin) = &config.admin_address {
        match admin.rsplit_once(':').map(|(h, p)| (h, p.parse::<u16>())) {
            Some((host, Ok(port))) => {
                wanted.push(("admin endpoint (--admin-address)", host.into(), port))
            }
            _ => {
                return vec![Finding::error(format!(
                    "--admin-address {admin} is not ADDR:PORT"
                ))]
            }
        }
    }
    if let Some(mc) = &config.memcached {
        if let Some((host, Ok(port))) = mc
            .address
            .rsplit_once(':')
            .map(|(h, p)| (h, p.parse::<u16>()))
        {
            wanted.push(("memcached port (--memcached-address)", host.into(), port));
        }
    }
    let mut found = Vec::new();
    for (i, (what, host, port)) in wanted.iter().enumerate() {
        if *port == 0 {
            continue;
        }
        if let Some((other, ..)) = wanted[..i].iter().find(|(_, h, p)| p == port && h == host) {
            found.push(Finding::error(format!(
                "the {what} and the {other} are both port {port}: give each its own"
            )));
            continue;
        }
        let addr = format!("{host}:{port}");
        found.push(match TcpListener::bind(&addr) {
            Ok(_) => Finding::ok(format!("{what} {addr} is free")),
            Err(e) => Finding::error(format!(
                "cannot listen on {addr} for the {what} ({e}): {}",
                bind_hint(e.kind(), *port)
            )),
        });
    }
    found
}

/// What to do about a failed bind.
fn bind_hint(kind: ErrorKind, port: u16) -> &'static str {
    match kind {
        ErrorKind::AddrInUse => {
            "another process listens there (another hsd?): stop it or choose another port"
        }
        ErrorKind::PermissionDenied if port < 1024 => {
            "ports below 1024 need root or CAP_NET_BIND_SERVICE: choose a port from 1024 up"
        }
        ErrorKind::AddrNotAvailable => "that address is not one of this machine's: fix --address",
        _ => "fix the address or port",
    }
}
