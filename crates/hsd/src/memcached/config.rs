//! What the memcached front serves: `--memcached-address`, the config
//! file's `[memcached]` table, and the containers (the plugin's mappings of
//! keys to a table's columns), from the config file or, as the InnoDB
//! memcached plugin kept them, from `innodb_memcache.containers` and
//! `innodb_memcache.config_options`, read once at start.

use super::answer::McAnswer;
use super::fit::TextRules;
use super::flush::FlushPolicy;
use super::policy::{caching_refusal, CachePolicy, Policies};
use super::sasl::SaslLogin;
use crate::exec::{open_index, run_reads, Catalog, ReadTask};
use anyhow::Context;
use hs_proto::{FindOp, FindRequest, OpenIndexRequest};
use hsd_storage::{Backend, OpenedIndex, StorageConn, TableMeta};
use mc_proto::keys::{DEFAULT_CONTAINER_DELIMITER, DEFAULT_VALUE_SEPARATOR};
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

/// `--memcached-max-item-size` unless set (memcached's default item size).
pub(crate) const DEFAULT_MAX_ITEM_SIZE: usize = 1 << 20;
/// Containers read from `innodb_memcache.containers` at most.
const MAX_CONTAINERS: u32 = 1000;

/// One container as the plugin's `containers` table (and the config file's
/// `[[memcached.containers]]`) names it.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub(crate) struct ContainerSpec {
    pub(crate) name: String,
    pub(crate) db_schema: String,
    pub(crate) db_table: String,
    pub(crate) key_columns: String,
    pub(crate) value_columns: String,
    #[serde(default)]
    pub(crate) flags: Option<String>,
    #[serde(default)]
    pub(crate) cas_column: Option<String>,
    #[serde(default)]
    pub(crate) expire_time_column: Option<String>,
    #[serde(default)]
    pub(crate) unique_idx_name_on_key: Option<String>,
    /// What `flush_all` does to the table: `innodb_only` (or `caching`)
    /// empties it, `cache_only` leaves it, `disabled` (the default in the
    /// config file) refuses. From `innodb_memcache.cache_policies` for the
    /// plugin's containers.
    #[serde(default)]
    pub(crate) flush_policy: Option<String>,
    /// Where gets, writes and deletes go (`policy`): `innodb_only` (the
    /// default), `caching`, `cache_only` or `disabled`. From
    /// `innodb_memcache.cache_policies` for the plugin's containers.
    #[serde(default)]
    pub(crate) get_policy: Option<String>,
    #[serde(default)]
    pub(crate) set_policy: Option<String>,
    #[serde(default)]
    pub(crate) delete_policy: Option<String>,
}

/// The config file's `[memcached]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileSettings {
    #[serde(default)]
    pub(crate) containers: Vec<ContainerSpec>,
    /// Joins value columns (the plugin's `separator`, default `|`).
    #[serde(default)]
    pub(crate) separator: Option<String>,
    /// Between a container's name and a key (`table_map_delimiter`, default `.`).
    #[serde(default)]
    pub(crate) table_map_delimiter: Option<String>,
    /// MiB the items of `cache_only` containers may take, together
    /// (default 64); the least recently used go first.
    #[serde(default)]
    pub(crate) cache_only_mib: Option<u64>,
}

/// `--memcached-sweep-interval` unless set, in seconds.
const DEFAULT_SWEEP_INTERVAL: u64 = 60;
/// `--memcached-sweep-limit` unless set: rows per container and sweep.
const DEFAULT_SWEEP_LIMIT: usize = 1000;
/// The most `--memcached-sweep-limit` may be: one sweep of a container is
/// one delete of this many rows in a group commit.
const MAX_SWEEP_LIMIT: usize = 100_000;

/// The `--memcached-*` options as given (flags, environment, config file).
#[derive(Debug, Default)]
pub(crate) struct MemcachedOptions {
    pub(crate) address: Option<String>,
    pub(crate) max_item_size: Option<usize>,
    pub(crate) sasl: Option<SaslLogin>,
    pub(crate) sweep_interval: Option<u64>,
    pub(crate) sweep_limit: Option<usize>,
}

/// `--memcached-address` and its settings, checked.
#[derive(Debug, Clone)]
pub(crate) struct MemcachedConfig {
    pub(crate) address: String,
    pub(crate) max_item_size: usize,
    /// SASL's one login (None: no authentication, text protocol served).
    pub(crate) sasl: Option<SaslLogin>,
    /// Sweeps of expired rows (None: none).
    pub(crate) sweep: Option<SweepSettings>,
    pub(crate) file: FileSettings,
}

/// How often the sweep of expired rows runs and how much one deletes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SweepSettings {
    pub(crate) interval: Duration,
    /// Rows one sweep deletes at most, per container.
    pub(crate) limit: usize,
}

impl MemcachedConfig {
    pub(crate) fn resolve(
        options: MemcachedOptions,
        file: Option<FileSettings>,
    ) -> anyhow::Result<Option<MemcachedConfig>> {
        let Some(address) = options.address.filter(|a| !a.is_empty()) else {
            anyhow::ensure!(
                options.sasl.is_none(),
                "--memcached-sasl-user needs --memcached-address (the memcached port it protects)"
            );
            return Ok(None);
        };
        let max_item_size = options.max_item_size.unwrap_or(DEFAULT_MAX_ITEM_SIZE);
        anyhow::ensure!(
            (1..=64 << 20).contains(&max_item_size),
            "--memcached-max-item-size must be 1 to 67108864 bytes, not {max_item_size}"
        );
        let interval = options.sweep_interval.unwrap_or(DEFAULT_SWEEP_INTERVAL);
        let limit = options.sweep_limit.unwrap_or(DEFAULT_SWEEP_LIMIT);
        anyhow::ensure!(
            (1..=MAX_SWEEP_LIMIT).contains(&limit),
            "--memcached-sweep-limit must be 1 to {MAX_SWEEP_LIMIT} rows, not {limit}"
        );
        let sweep = (interval > 0).then(|| SweepSettings {
            interval: Duration::from_secs(interval),
            limit,
        });
        let file = file.unwrap_or_default();
        for spec in &file.containers {
            Container::from_spec(spec.clone())?;
        }
        Ok(Some(MemcachedConfig {
            address,
            max_item_size,
            sasl: options.sasl,
            sweep,
            file,
        }))
    }
}

/// A container, resolved: the columns its index opens are `columns()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Container {
    pub(crate) name: Vec<u8>,
    pub(crate) db: String,
    pub(crate) table: String,
    pub(crate) index: String,
    pub(crate) key: String,
    pub(crate) values: Vec<String>,
    pub(crate) flags: Option<String>,
    pub(crate) cas: Option<String>,
    pub(crate) expire: Option<String>,
    pub(crate) flush: FlushPolicy,
    pub(crate) policies: Policies,
}

/// A column name the plugin's tables leave empty (or NULL) means none.
fn named(column: Option<String>) -> Option<String> {
    column
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
}

impl Container {
    pub(crate) fn from_spec(spec: ContainerSpec) -> anyhow::Result<Container> {
        let what = format!("memcached container {:?}", spec.name);
        anyhow::ensure!(!spec.name.is_empty(), "a memcached container has no name");
        let key = spec.key_columns.trim().to_string();
        anyhow::ensure!(
            !key.is_empty() && !key.contains([',', ';', '|', ' ']),
            "{what}: key_columns must name one column, not {key:?}"
        );
        // The plugin took `,`, `;`, `|` and spaces between value columns.
        let values: Vec<String> = spec
            .value_columns
            .split([',', ';', '|', ' ', '\t'])
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect();
        anyhow::ensure!(!values.is_empty(), "{what}: value_columns names no column");
        anyhow::ensure!(
            !spec.db_schema.is_empty() && !spec.db_table.is_empty(),
            "{what}: db_schema and db_table are needed"
        );
        let flush = match named(spec.flush_policy) {
            None => FlushPolicy::Disabled,
            Some(name) => FlushPolicy::parse(&name).ok_or_else(|| {
                anyhow::anyhow!(
                    "{what}: flush_policy must be innodb_only, caching, cache_only or \
                     disabled, not {name:?}"
                )
            })?,
        };
        let policies = Policies {
            get: CachePolicy::read(spec.get_policy.as_deref(), &format!("{what}: get_policy"))?,
            set: CachePolicy::read(spec.set_policy.as_deref(), &format!("{what}: set_policy"))?,
            delete: CachePolicy::read(
                spec.delete_policy.as_deref(),
                &format!("{what}: delete_policy"),
            )?,
        };
        Ok(Container {
            flush,
            policies,
            name: spec.name.into_bytes(),
            db: spec.db_schema,
            table: spec.db_table,
            index: named(spec.unique_idx_name_on_key).unwrap_or_else(|| "PRIMARY".into()),
            key,
            values,
            flags: named(spec.flags),
            cas: named(spec.cas_column),
            expire: named(spec.expire_time_column),
        })
    }

    /// Whether `other` serves the same table.
    pub(crate) fn same_table(&self, other: &Container) -> bool {
        self.db == other.db && self.table == other.table
    }

    /// Takes the table's own spelling of the column and index names (MySQL
    /// matches them without regard to case, as the plugin did; an opening
    /// compares them exactly). A name the table lacks is an error.
    fn adopt_names(&mut self, meta: &TableMeta) -> anyhow::Result<()> {
        let container = String::from_utf8_lossy(&self.name).into_owned();
        let table = format!("{}.{}", self.db, self.table);
        let adopt = |name: &mut String, known: Vec<&String>| match known
            .into_iter()
            .find(|k| k.eq_ignore_ascii_case(name))
        {
            Some(k) => {
                *name = k.clone();
                Ok(())
            }
            None => Err(anyhow::anyhow!(
                "memcached container {container:?}: {table} has no column or index {name:?}"
            )),
        };
        let columns = || meta.columns.iter().map(|c| &c.name).collect::<Vec<_>>();
        adopt(&mut self.key, columns())?;
        for value in &mut self.values {
            adopt(value, columns())?;
        }
        for column in [&mut self.flags, &mut self.cas, &mut self.expire]
            .into_iter()
            .flatten()
        {
            adopt(column, columns())?;
        }
        adopt(
            &mut self.index,
            meta.indexes.iter().map(|i| &i.name).collect(),
        )?;
        if let Some(why) = index_refusal(meta, &self.index, self) {
            anyhow::bail!("memcached container {container:?}: {table}: {why}");
        }
        let key = meta.columns.iter().find(|c| c.name == self.key);
        if let Some(why) = key.and_then(super::fit::key_column_refusal) {
            anyhow::bail!("memcached container {container:?}: {table}: {why}");
        }
        Ok(())
    }

    /// The opened columns: the key, the values, then flags, cas and expiry
    /// where the container names them; the filter columns are the same
    /// without the key (writes that must not overwrite a change made
    /// meanwhile compare them).
    pub(crate) fn open_request(&self) -> OpenIndexRequest {
        let mut columns = vec![self.key.clone()];
        columns.extend(self.values.iter().cloned());
        columns.extend(self.flags.iter().cloned());
        columns.extend(self.cas.iter().cloned());
        columns.extend(self.expire.iter().cloned());
        let columns: Vec<Vec<u8>> = columns.into_iter().map(String::into_bytes).collect();
        OpenIndexRequest {
            index_id: 0,
            db: self.db.clone().into_bytes(),
            table: self.table.clone().into_bytes(),
            index: self.index.clone().into_bytes(),
            filter_columns: columns[1..].to_vec(),
            columns,
        }
    }
}

/// Why a container cannot be served on `index` of `table` (None: it can):
/// the plugin needed a unique index on the key column
/// (`unique_idx_name_on_key`), and so does hsd: on any other index a key
/// names several rows (a `delete` would answer `DELETED` and a `get` then
/// find the other), or rows by another column.
pub(crate) fn index_refusal(
    table: &TableMeta,
    index: &str,
    container: &Container,
) -> Option<String> {
    let Some(meta) = table.indexes.iter().find(|i| i.name == index) else {
        return Some(format!("no index {index:?}"));
    };
    // MySQL compares column names without regard to case (a table made
    // after the start has not lent the container its spelling).
    let key = table
        .columns
        .iter()
        .position(|c| c.name.eq_ignore_ascii_case(&container.key));
    let on_key_alone = meta.key_columns.len() == 1
        && key.is_some()
        && meta.key_columns[0] == key
        && meta.key_prefix.iter().all(Option::is_none);
    if !meta.unique {
        Some(format!(
            "index {index:?} (unique_idx_name_on_key) is not unique: memcached needs a unique \
             index on the key column {:?}",
            container.key
        ))
    } else if !on_key_alone {
        Some(format!(
            "index {index:?} (unique_idx_name_on_key) is not on the key column {:?} alone \
             (whole, not a prefix)",
            container.key
        ))
    } else {
        None
    }
}

/// Every container, the default one, and the key and value syntax.
#[derive(Debug, Clone)]
pub(crate) struct Containers {
    pub(crate) list: Vec<Container>,
    /// Serves plain keys: the one named `default`, else the first.
    pub(crate) default: usize,
    pub(crate) separator: Vec<u8>,
    pub(crate) delimiter: Vec<u8>,
    /// How the backend stores text (what keys and values `fit` takes).
    pub(crate) text: TextRules,
    /// Whether hsd runs a row cache (what a `caching` policy needs).
    pub(crate) row_cache: bool,
}

impl Containers {
    pub(crate) fn new(
        list: Vec<Container>,
        separator: Option<String>,
        delimiter: Option<String>,
    ) -> anyhow::Result<Containers> {
        anyhow::ensure!(
            !list.is_empty(),
            "--memcached-address needs containers: [[memcached.containers]] in the config file, \
             or an innodb_memcache.containers table on the backend"
        );
        let default = list.iter().position(|c| c.name == b"default").unwrap_or(0);
        let pick = |given: Option<String>, fallback: &[u8]| {
            given
                .filter(|s| !s.is_empty())
                .map_or_else(|| fallback.to_vec(), String::into_bytes)
        };
        Ok(Containers {
            list,
            default,
            separator: pick(separator, DEFAULT_VALUE_SEPARATOR),
            delimiter: pick(delimiter, DEFAULT_CONTAINER_DELIMITER),
            text: TextRules::Charsets,
            row_cache: false,
        })
    }

    pub(crate) fn find(&self, name: &[u8]) -> Option<usize> {
        self.list.iter().position(|c| c.name == name)
    }
}

/// The containers to serve: the config file's when it lists any, else the
/// backend's `innodb_memcache` tables (read once, now).
pub(crate) async fn load_containers<B: Backend>(
    backend: &B,
    catalog: &Catalog,
    settings: &FileSettings,
    row_cache: bool,
) -> anyhow::Result<Containers> {
    let mut conn = backend
        .connect()
        .await
        .context("connecting to look at the memcached containers' tables")?;
    if !settings.containers.is_empty() {
        let mut list = settings
            .containers
            .iter()
            .map(|s| Container::from_spec(s.clone()))
            .collect::<anyhow::Result<Vec<_>>>()?;
        adopt_names(&mut conn, &mut list, row_cache).await?;
        let mut containers = Containers::new(
            list,
            settings.separator.clone(),
            settings.table_map_delimiter.clone(),
        )?;
        containers.text = backend.text_rules();
        containers.row_cache = row_cache;
        return Ok(containers);
    }
    let mut specs = read_plugin_containers(&mut conn, catalog).await?;
    let options = read_plugin_options(&mut conn, catalog).await;
    let [get, set, delete, flush] = read_plugin_policies(&mut conn, catalog).await;
    for spec in &mut specs {
        spec.get_policy = get.clone();
        spec.set_policy = set.clone();
        spec.delete_policy = delete.clone();
        spec.flush_policy = flush.clone();
    }
    let mut list = specs
        .into_iter()
        .map(Container::from_spec)
        .collect::<anyhow::Result<Vec<_>>>()?;
    adopt_names(&mut conn, &mut list, row_cache).await?;
    let option = |name: &str| {
        options
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let mut containers = Containers::new(
        list,
        settings.separator.clone().or(option("separator")),
        settings
            .table_map_delimiter
            .clone()
            .or(option("table_map_delimiter")),
    )?;
    containers.text = backend.text_rules();
    containers.row_cache = row_cache;
    Ok(containers)
}

/// Each container whose table exists now takes its spelling of the names;
/// a table that does not exist yet is looked at when first used. A
/// container whose `caching` policy no row cache can serve is refused
/// (`policy::caching_refusal`).
async fn adopt_names<C: StorageConn>(
    conn: &mut C,
    list: &mut [Container],
    row_cache: bool,
) -> anyhow::Result<()> {
    for container in list {
        let meta = match conn.describe(&container.db, &container.table).await {
            Ok(meta) => {
                container.adopt_names(&meta)?;
                Some(meta)
            }
            Err(e) => {
                tracing::warn!(
                    db = %container.db,
                    table = %container.table,
                    error = %e,
                    "a memcached container's table cannot be read yet"
                );
                None
            }
        };
        if let Some(why) = caching_refusal(container, row_cache, meta.as_ref()) {
            anyhow::bail!(why);
        }
    }
    Ok(())
}

/// Every row of `innodb_memcache.<table>` in primary key order, the given
/// columns of each (NULL as None).
async fn read_table<C: StorageConn>(
    conn: &mut C,
    catalog: &Catalog,
    table: &str,
    columns: &[&str],
) -> Result<Vec<Vec<Option<String>>>, String> {
    let req = OpenIndexRequest {
        index_id: 0,
        db: b"innodb_memcache".to_vec(),
        table: table.as_bytes().to_vec(),
        index: b"PRIMARY".to_vec(),
        columns: columns.iter().map(|c| c.as_bytes().to_vec()).collect(),
        filter_columns: Vec::new(),
    };
    let index: Arc<OpenedIndex> = open_index(conn, catalog, &req)
        .await
        .map_err(|e| format!("cannot open innodb_memcache.{table} ({})", e.reason()))?;
    let find = FindRequest {
        op: FindOp::Ge,
        keys: vec![Some(Vec::new())],
        limit: MAX_CONTAINERS,
        offset: 0,
        in_clause: None,
        filters: Vec::new(),
        modify: None,
    };
    let mut tasks = vec![ReadTask::<McAnswer>::new(index, find)];
    run_reads(conn, &mut tasks, &[0], 16 << 20).await;
    let answer = &tasks[0].out;
    if let Some(kind) = answer.failure() {
        return Err(format!(
            "reading innodb_memcache.{table} failed ({})",
            kind.reason()
        ));
    }
    Ok(answer
        .rows()
        .map(|row| {
            row.iter()
                .map(|v| v.map(|b| String::from_utf8_lossy(b).into_owned()))
                .collect()
        })
        .collect())
}

async fn read_plugin_containers<C: StorageConn>(
    conn: &mut C,
    catalog: &Catalog,
) -> anyhow::Result<Vec<ContainerSpec>> {
    let rows = read_table(
        conn,
        catalog,
        "containers",
        &[
            "name",
            "db_schema",
            "db_table",
            "key_columns",
            "value_columns",
            "flags",
            "cas_column",
            "expire_time_column",
            "unique_idx_name_on_key",
        ],
    )
    .await
    .map_err(|e| {
        anyhow::anyhow!(
            "--memcached-address: no containers in the config file and {e}: add \
             [[memcached.containers]] to the config file or create innodb_memcache"
        )
    })?;
    Ok(rows
        .into_iter()
        .map(|mut row| {
            row.resize(9, None);
            let mut take = |i: usize| row[i].take();
            ContainerSpec {
                name: take(0).unwrap_or_default(),
                db_schema: take(1).unwrap_or_default(),
                db_table: take(2).unwrap_or_default(),
                key_columns: take(3).unwrap_or_default(),
                value_columns: take(4).unwrap_or_default(),
                flags: take(5),
                cas_column: take(6),
                expire_time_column: take(7),
                unique_idx_name_on_key: take(8),
                ..ContainerSpec::default()
            }
        })
        .collect())
}

/// The policies of the first row of `innodb_memcache.cache_policies` (by
/// `policy_name`), which the plugin applied to every container: get, set,
/// delete and flush, in that order. A NULL reads as `innodb_only`, as the
/// plugin read it; without the table (or a row) gets, sets and deletes go
/// to the table and `flush_all` is refused.
async fn read_plugin_policies<C: StorageConn>(
    conn: &mut C,
    catalog: &Catalog,
) -> [Option<String>; 4] {
    let rows = read_table(
        conn,
        catalog,
        "cache_policies",
        &[
            "policy_name",
            "get_policy",
            "set_policy",
            "delete_policy",
            "flush_policy",
        ],
    )
    .await;
    match rows {
        Ok(rows) => {
            let Some(first) = rows.into_iter().next() else {
                tracing::info!(
                    "innodb_memcache.cache_policies is empty; memcached flush_all is refused"
                );
                return [None, None, None, None];
            };
            let policy = |i: usize| {
                Some(
                    first
                        .get(i)
                        .cloned()
                        .flatten()
                        .unwrap_or_else(|| "innodb_only".into()),
                )
            };
            [policy(1), policy(2), policy(3), policy(4)]
        }
        Err(e) => {
            tracing::info!("{e}; memcached commands go to the tables and flush_all is refused");
            [None, None, None, None]
        }
    }
}

/// `innodb_memcache.config_options` (name, value); none when it is missing.
async fn read_plugin_options<C: StorageConn>(
    conn: &mut C,
    catalog: &Catalog,
) -> Vec<(String, String)> {
    match read_table(conn, catalog, "config_options", &["name", "value"]).await {
        Ok(rows) => rows
            .into_iter()
            .filter_map(|row| match (row.first(), row.get(1)) {
                (Some(Some(n)), Some(Some(v))) => Some((n.clone(), v.clone())),
                _ => None,
            })
            .collect(),
        Err(e) => {
            tracing::info!("{e}; memcached uses the default separator and delimiter");
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> ContainerSpec {
        ContainerSpec {
            name: name.into(),
            db_schema: "test".into(),
            db_table: "demo_test".into(),
            key_columns: "c1".into(),
            value_columns: "c2,c21|c22".into(),
            flags: Some("c3".into()),
            cas_column: Some("c4".into()),
            expire_time_column: Some(" ".into()),
            unique_idx_name_on_key: None,
            ..ContainerSpec::default()
        }
    }

    #[test]
    fn the_config_file_names_the_port_and_the_containers() {
        let text = r#"
memcached-address = "127.0.0.1:11211"
[memcached]
separator = ";"
[[memcached.containers]]
name = "kv"
db_schema = "shop"
db_table = "kv"
key_columns = "k"
value_columns = "v"
"#;
        let options: crate::config::ServeOptions = toml::from_str(text).expect("parses");
        let config = MemcachedConfig::resolve(
            MemcachedOptions {
                address: options.memcached_address,
                max_item_size: options.memcached_max_item_size.map(|s| s.0),
                ..MemcachedOptions::default()
            },
            options.memcached,
        )
        .expect("valid")
        .expect("on");
        assert_eq!(config.address, "127.0.0.1:11211");
        assert_eq!(config.max_item_size, DEFAULT_MAX_ITEM_SIZE);
        assert_eq!(config.file.separator.as_deref(), Some(";"));
        assert_eq!(config.file.containers[0].name, "kv");
        let unknown: Result<crate::config::ServeOptions, _> =
            toml::from_str("[memcached]\nseperator = \";\"\n");
        assert!(unknown.is_err(), "a misspelt key is an error");
        assert_eq!(
            config.sweep,
            Some(SweepSettings {
                interval: Duration::from_secs(DEFAULT_SWEEP_INTERVAL),
                limit: DEFAULT_SWEEP_LIMIT
            })
        );
        assert!(config.sasl.is_none());
        assert!(MemcachedConfig::resolve(MemcachedOptions::default(), None)
            .expect("off")
            .is_none());
        let on = |o: MemcachedOptions| {
            MemcachedConfig::resolve(
                MemcachedOptions {
                    address: Some("x:1".into()),
                    ..o
                },
                None,
            )
        };
        assert!(on(MemcachedOptions {
            max_item_size: Some(0),
            ..MemcachedOptions::default()
        })
        .is_err());
        for limit in [0, MAX_SWEEP_LIMIT + 1] {
            assert!(on(MemcachedOptions {
                sweep_limit: Some(limit),
                ..MemcachedOptions::default()
            })
            .is_err());
        }
        let off = on(MemcachedOptions {
            sweep_interval: Some(0),
            ..MemcachedOptions::default()
        });
        assert_eq!(off.expect("valid").expect("on").sweep, None);
        let login = || {
            SaslLogin::new(
                "u".into(),
                crate::secrets::Secret::new(b"p".to_vec(), "pw").expect("secret"),
            )
            .expect("login")
        };
        let sasl_without_port = MemcachedConfig::resolve(
            MemcachedOptions {
                sasl: Some(login()),
                ..MemcachedOptions::default()
            },
            None,
        );
        assert!(sasl_without_port.is_err());
    }

    #[test]
    fn containers_resolve_as_the_plugin_did() {
        let c = Container::from_spec(spec("aaa")).expect("valid");
        assert_eq!(c.values, ["c2", "c21", "c22"]);
        assert_eq!(c.expire, None);
        let req = c.open_request();
        assert_eq!(req.index, b"PRIMARY");
        let cols: Vec<&[u8]> = req.columns.iter().map(Vec::as_slice).collect();
        assert_eq!(cols, [&b"c1"[..], b"c2", b"c21", b"c22", b"c3", b"c4"]);
        assert_eq!(req.filter_columns.len(), 5);
        let set = Containers::new(
            vec![
                c.clone(),
                Container::from_spec(spec("default")).expect("valid"),
            ],
            None,
            Some(String::new()),
        )
        .expect("containers");
        assert_eq!(set.default, 1);
        assert_eq!(set.delimiter, b".");
        assert_eq!(set.separator, b"|");
        let first = Containers::new(vec![c], Some("::".into()), None).expect("containers");
        assert_eq!(first.default, 0);
        assert_eq!(first.separator, b"::");
        let mut bad = spec("x");
        bad.key_columns = "a,b".into();
        assert!(Container::from_spec(bad).is_err());
        assert!(Containers::new(Vec::new(), None, None).is_err());
    }
}
