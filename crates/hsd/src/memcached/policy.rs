//! The InnoDB memcached plugin's cache policies for get, set and delete
//! (`innodb_memcache.cache_policies`' `get_policy`, `set_policy`,
//! `delete_policy`, or a config-file container's keys of those names):
//! where each command of a container goes. `flush_policy` is `flush`'s.
//!
//! - `innodb_only`: the table (the default);
//! - `caching`: the table, with gets served by hsd's row cache, which a
//!   MySQL backend keeps exact from the binary log; refused at start where
//!   no row cache can serve the container (the embedded store, MySQL
//!   without `--row-cache-mib`, a key column the cache does not hold);
//! - `cache_only`: memory only, as memcached (`memory`), never the table;
//! - `disabled`: the command is refused. The plugin answered a disabled
//!   get as a miss, which hsd keeps, but a disabled set or delete as
//!   `STORED` or `DELETED` with nothing done; hsd answers those with an
//!   error instead (never success for what was not done).

use super::config::Container;
use hsd_storage::TableMeta;

/// Where one kind of command of a container goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum CachePolicy {
    #[default]
    InnodbOnly,
    Caching,
    CacheOnly,
    Disabled,
}

impl CachePolicy {
    /// The plugin's name of a policy, in any case.
    pub(crate) fn parse(name: &str) -> Option<CachePolicy> {
        match name.trim().to_ascii_lowercase().as_str() {
            "innodb_only" => Some(CachePolicy::InnodbOnly),
            "caching" => Some(CachePolicy::Caching),
            "cache_only" => Some(CachePolicy::CacheOnly),
            "disabled" => Some(CachePolicy::Disabled),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            CachePolicy::InnodbOnly => "innodb_only",
            CachePolicy::Caching => "caching",
            CachePolicy::CacheOnly => "cache_only",
            CachePolicy::Disabled => "disabled",
        }
    }

    /// Reads `given` (None or empty: `innodb_only`), `what` naming it in
    /// the error.
    pub(crate) fn read(given: Option<&str>, what: &str) -> anyhow::Result<CachePolicy> {
        match given.map(str::trim).filter(|s| !s.is_empty()) {
            None => Ok(CachePolicy::InnodbOnly),
            Some(name) => CachePolicy::parse(name).ok_or_else(|| {
                anyhow::anyhow!(
                    "{what} must be innodb_only, caching, cache_only or disabled, not {name:?}"
                )
            }),
        }
    }
}

/// A container's policies for the three kinds of command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Policies {
    pub(crate) get: CachePolicy,
    /// Every command that writes an item: the stores, incr/decr, touch.
    pub(crate) set: CachePolicy,
    pub(crate) delete: CachePolicy,
}

/// The kind of command a policy is chosen for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Get,
    Set,
    Delete,
}

impl Policies {
    pub(crate) fn of(&self, kind: Kind) -> CachePolicy {
        match kind {
            Kind::Get => self.get,
            Kind::Set => self.set,
            Kind::Delete => self.delete,
        }
    }

    /// Whether any command of the container goes to its table (else the
    /// sweep of expired rows leaves the table alone too).
    pub(crate) fn reaches_table(&self) -> bool {
        [self.get, self.set, self.delete]
            .iter()
            .any(|p| matches!(p, CachePolicy::InnodbOnly | CachePolicy::Caching))
    }

    fn caching(&self) -> Option<&'static str> {
        [
            ("get_policy", self.get),
            ("set_policy", self.set),
            ("delete_policy", self.delete),
        ]
        .into_iter()
        .find(|(_, p)| *p == CachePolicy::Caching)
        .map(|(name, _)| name)
    }
}

/// Why `container` cannot be served as its policies say (None: it can),
/// `row_cache` telling whether hsd runs a row cache, `table` the
/// container's table where it can be read now (a table made later is
/// looked at when first used).
pub(crate) fn caching_refusal(
    container: &Container,
    row_cache: bool,
    table: Option<&TableMeta>,
) -> Option<String> {
    let name = String::from_utf8_lossy(&container.name);
    let policy = container.policies.caching()?;
    if !row_cache {
        return Some(format!(
            "memcached container {name:?}: {policy} caching needs hsd's row cache, which this \
             backend does not run (the embedded store has none; MySQL needs --row-cache-mib): \
             choose innodb_only or cache_only"
        ));
    }
    let table = table?;
    let index = table
        .indexes
        .iter()
        .find(|i| i.name.eq_ignore_ascii_case(&container.index))?;
    if hsd_storage::row_cache::serves_index(table, index) {
        return None;
    }
    Some(format!(
        "memcached container {name:?}: {policy} caching: the row cache holds no row of \
         {}.{} by its key column {:?} (only integer and VARBINARY keys are cached): choose \
         innodb_only or cache_only",
        container.db, container.table, container.key
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_read_as_the_plugin_named_them() {
        assert_eq!(
            CachePolicy::parse("INNODB_ONLY"),
            Some(CachePolicy::InnodbOnly)
        );
        assert_eq!(CachePolicy::parse("caching"), Some(CachePolicy::Caching));
        assert_eq!(
            CachePolicy::parse(" cache_only "),
            Some(CachePolicy::CacheOnly)
        );
        assert_eq!(CachePolicy::parse("disabled"), Some(CachePolicy::Disabled));
        assert_eq!(CachePolicy::parse("mix"), None);
        assert_eq!(
            CachePolicy::read(None, "x").expect("default"),
            CachePolicy::InnodbOnly
        );
        assert!(CachePolicy::read(Some("sometimes"), "get_policy").is_err());
        for p in [
            CachePolicy::InnodbOnly,
            CachePolicy::Caching,
            CachePolicy::CacheOnly,
            CachePolicy::Disabled,
        ] {
            assert_eq!(CachePolicy::parse(p.name()), Some(p));
        }
    }
}
