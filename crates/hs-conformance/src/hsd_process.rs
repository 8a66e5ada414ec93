//! Starts an hsd binary for the long-run tool: free ports, its ready line
//! parsed for the addresses, killed when dropped.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use anyhow::{bail, Context, Result};

pub struct HsdProcess {
    child: Child,
    pub read_addr: String,
    pub write_addr: String,
}

impl HsdProcess {
    pub fn start(bin: &Path, data_dir: &Path, backend: Option<&str>) -> Result<HsdProcess> {
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("create {}", data_dir.display()))?;
        let mut cmd = Command::new(bin);
        cmd.arg("serve")
            .args(["--address", "127.0.0.1", "--port", "0", "--port-wr", "0"])
            .arg("--data-dir")
            .arg(data_dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(url) = backend {
            cmd.args(["--backend", url]);
        }
        let mut child = cmd
            .spawn()
            .with_context(|| format!("start {}", bin.display()))?;
        let stdout = child.stdout.take().context("hsd stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let line = match lines.next() {
            Some(Ok(l)) => l,
            _ => {
                let _ = child.kill();
                bail!(
                    "{} printed no ready line (did it fail to start?)",
                    bin.display()
                );
            }
        };
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{name}=")))
                .map(str::to_string)
        };
        let (Some(read_addr), Some(write_addr)) = (field("read"), field("write")) else {
            let _ = child.kill();
            bail!("unexpected ready line from hsd: {line:?}");
        };
        std::thread::spawn(move || for _ in lines {});
        Ok(HsdProcess {
            child,
            read_addr,
            write_addr,
        })
    }
}

impl Drop for HsdProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
