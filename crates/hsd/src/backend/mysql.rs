//! MySQL/MariaDB backend (issue 3): placeholder until it lands.

use super::{Backend, StorageConn, StorageError};
use crate::config::Config;

pub struct MysqlBackend;

impl MysqlBackend {
    pub fn from_config(_config: &Config) -> anyhow::Result<MysqlBackend> {
        anyhow::bail!("the MySQL backend is not built yet")
    }
}

impl Backend for MysqlBackend {
    fn connect(&self) -> Result<Box<dyn StorageConn>, StorageError> {
        Err(StorageError::Unavailable("not built".into()))
    }
    fn describe_target(&self) -> String {
        "mysql".into()
    }
}
