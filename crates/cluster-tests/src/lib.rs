//! Nothing here: the package holds the replication and Galera suites
//! (`tests/`), which run against the servers scripts/replication.sh and
//! scripts/galera.sh start. See docs/replication.md.
