//! The write path of a storage connection: a group's inserts and updates
//! sent as pipelined statements, consecutive rows merged into one
//! statement where that is safe, and sent again one by one if it fails.

use super::batch_sql::{
    push_insert, push_insert_run, push_update_by_keys, push_write, push_write_run, BATCH_SQL_BYTES,
};
use super::conn::{live_link, MysqlConn, Txn};
use super::errors::{doomed, refused_error};
use super::link::{Answer, Discard, Failure};
use hsd_storage::{Change, RowInsert, RowTarget, RowWrite, StorageError, WriteValue};
use mysql_wire::OkPacket;
use std::ops::Range;

/// The savepoint a merged UPDATE by keys may be undone to.
const BY_KEYS_SAVEPOINT: &[u8] = b"SAVEPOINT hsd_by_keys";
const BY_KEYS_UNDO: &[u8] = b"ROLLBACK TO SAVEPOINT hsd_by_keys";

impl MysqlConn {
    /// Runs the write statements whose texts are `spans` of `self.sql`,
    /// pipelined: they leave in one write and their answers are read in
    /// order. One result per statement. A statement that dooms the group
    /// fails the ones behind it too. `retry`: the statements may be sent
    /// again on a new connection when the server closed the old one before
    /// answering any (their changes went with that session's transaction);
    /// never for a table without transactions, whose statement may have
    /// been applied before the server closed the connection.
    async fn run_writes(
        &mut self,
        spans: &[Range<usize>],
        retry: bool,
    ) -> Vec<Result<OkPacket, StorageError>> {
        if let Txn::Doomed(e) = &self.txn {
            return spans.iter().map(|_| Err(doomed(e))).collect();
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut results: Vec<Result<OkPacket, StorageError>> = Vec::with_capacity(spans.len());
            let outcome = async {
                self.ensure_session().await?;
                let link = live_link(&mut self.link, &mut self.handles, &self.connector).await?;
                for span in spans {
                    let text = &self.sql[span.clone()];
                    link.queue(|out| out.extend_from_slice(text));
                }
                for _ in spans {
                    results.push(match link.answer(&mut Discard).await? {
                        Answer::Done(ok) => Ok(ok),
                        Answer::Refused(e) => Err(refused_error(&e)),
                    });
                }
                Ok::<(), Failure>(())
            }
            .await;
            if !results.is_empty() && matches!(self.txn, Txn::Wanted) {
                self.txn = Txn::Open;
            }
            if !results.is_empty() {
                self.wrote = true;
            }
            if matches!(self.txn, Txn::Open) {
                let first_doom = results
                    .iter()
                    .position(|r| matches!(r, Err(e) if self.ends_transaction(e)));
                if let Some(k) = first_doom {
                    if let Err(e) = &results[k] {
                        let e = e.clone();
                        for later in &mut results[k + 1..] {
                            *later = Err(doomed(&e));
                        }
                        self.txn = Txn::Doomed(e);
                    }
                }
            }
            if matches!(self.txn, Txn::Off) {
                // Autocommitted: each statement was its own commit.
                self.note_commit();
            }
            let Err(f) = outcome else {
                return results;
            };
            let answered = results.len();
            let attempt = if retry { attempt } else { u32::MAX };
            let error = match self.after_failure(f, false, answered > 0, attempt) {
                Ok(()) => continue,
                Err(e) => e,
            };
            // The link broke: what was not answered is lost (and in a group,
            // what was answered is too: the commit fails).
            results.resize_with(spans.len(), || Err(error.clone()));
            return results;
        }
    }

    /// A run of updates by key as one statement (`push_update_by_keys`),
    /// kept only when every key found its row: that needs no locking read
    /// ahead of it, and each write's answer is then one row found. A
    /// savepoint sent with it lets a statement that found fewer be undone;
    /// false means nothing of the run stands (not such a run, a key found
    /// no row, the statement failed) and the caller makes the writes the
    /// usual way, which answers each exactly. Only inside a group.
    pub(super) async fn update_by_keys_if_all_found(&mut self, writes: &[RowWrite<'_>]) -> bool {
        if !matches!(self.txn, Txn::Wanted | Txn::Open) {
            return false;
        }
        self.sql.clear();
        self.sql.extend_from_slice(BY_KEYS_SAVEPOINT);
        let savepoint = 0..self.sql.len();
        if !push_update_by_keys(writes, &mut self.sql) {
            return false;
        }
        let update = savepoint.end..self.sql.len();
        let answers = self.run_writes(&[savepoint, update], true).await;
        let all = writes.len() as u64;
        let saved = match answers.as_slice() {
            [_, Ok(ok)] if ok.affected_rows == all => return true,
            [saved, Ok(_)] => saved.is_ok(),
            // Failed whole: the statement changed nothing (or the group
            // is doomed, which the usual way then answers).
            _ => return false,
        };
        // A key found no row: undo the others' changes.
        let undone = if saved {
            self.sql.clear();
            self.sql.extend_from_slice(BY_KEYS_UNDO);
            let span = 0..self.sql.len();
            self.run_writes(&[span], true).await.pop()
        } else {
            None
        };
        match undone {
            Some(Ok(_)) => {}
            Some(Err(e)) if matches!(self.txn, Txn::Doomed(_)) => {
                tracing::debug!(error = %e, "undoing a merged UPDATE by keys failed; the group is doomed already");
            }
            other => {
                // Its changes may stand: the group must not commit.
                let e = match other {
                    Some(Err(e)) => e,
                    _ => StorageError::Unavailable(
                        "a merged UPDATE by keys found fewer rows and its savepoint was refused"
                            .into(),
                    ),
                };
                tracing::warn!(error = %e, "a merged UPDATE by keys could not be undone; the group rolls back");
                self.txn = Txn::Doomed(e);
            }
        }
        false
    }

    /// Consecutive rows for the same table and columns that generate no id
    /// leave as one multi-row INSERT, other rows as single INSERTs
    /// pipelined ahead of it. A multi-row INSERT is the last statement of
    /// its round trip: when it fails (a statement fails whole), its rows are
    /// sent again one by one, so each gets its own answer, before any later
    /// row runs.
    ///
    /// Rows that take a generated id always go one by one: a multi-row
    /// INSERT that fails has used up the ids it reserved, and the rows sent
    /// again would then get other ids than the original gives them.
    pub(super) async fn insert_in_runs(
        &mut self,
        rows: &[RowInsert<'_>],
    ) -> Vec<Result<Option<u64>, StorageError>> {
        let mut results = Vec::with_capacity(rows.len());
        let mut next = 0;
        while next < rows.len() {
            self.sql.clear();
            let mut spans: Vec<Range<usize>> = Vec::new();
            let mut runs: Vec<Range<usize>> = Vec::new();
            while next < rows.len() && self.sql.len() < BATCH_SQL_BYTES {
                let from = self.sql.len();
                let end = push_insert_run(rows, next, &mut self.sql);
                spans.push(from..self.sql.len());
                runs.push(next..end);
                next = end;
                if end - runs[runs.len() - 1].start > 1 {
                    break;
                }
            }
            let retry = rows.iter().all(|r| r.table.transactional);
            let answers = self.run_writes(&spans, retry).await;
            for (run, answer) in runs.into_iter().zip(answers) {
                match answer {
                    Ok(ok) => {
                        // A multi-row INSERT's rows generate no id: their
                        // answers ignore the number.
                        for row in &rows[run] {
                            let id = ok.last_insert_id;
                            results.push(Ok(row.table.has_autoincrement.then_some(id)));
                        }
                    }
                    Err(e) if run.len() > 1 && !matches!(self.txn, Txn::Doomed(_)) => {
                        tracing::debug!(rows = run.len(), error = %e, "multi-row INSERT failed; its rows go one by one");
                        self.sql.clear();
                        let mut spans = Vec::with_capacity(run.len());
                        for row in &rows[run.clone()] {
                            let from = self.sql.len();
                            push_insert(row, &mut self.sql);
                            spans.push(from..self.sql.len());
                        }
                        let answers = self.run_writes(&spans, retry).await;
                        for (row, answer) in rows[run].iter().zip(answers) {
                            results.push(answer.map(|ok| {
                                row.table.has_autoincrement.then_some(ok.last_insert_id)
                            }));
                        }
                    }
                    Err(e) => results.extend(run.map(|_| Err(e.clone()))),
                }
            }
        }
        results
    }

    /// Consecutive updates of the same columns of one table that no unique
    /// key depends on leave as one UPDATE (a CASE on the locator picks each
    /// row's values), the rest as single statements pipelined ahead of it.
    /// Like a multi-row INSERT, a merged UPDATE ends its round trip, and when
    /// it fails its rows are sent again one by one before anything later.
    /// (With a unique column written, one statement could succeed where the
    /// same changes one after another fail: a value two rows swap.) A
    /// write by key is a statement of its own, and counts the rows it found
    /// (the link asks for found rows, not changed ones, as the original
    /// counted); a row named by its locator was read, so it is found.
    pub(super) async fn write_in_runs(
        &mut self,
        writes: &[RowWrite<'_>],
    ) -> Vec<Result<u64, StorageError>> {
        let mut results = Vec::with_capacity(writes.len());
        let mut next = 0;
        while next < writes.len() {
            self.sql.clear();
            let mut spans: Vec<Range<usize>> = Vec::new();
            let mut runs: Vec<Range<usize>> = Vec::new();
            while next < writes.len() && self.sql.len() < BATCH_SQL_BYTES {
                let from = self.sql.len();
                let end = push_write_run(writes, next, &mut self.sql);
                let start = next;
                next = end;
                if from == self.sql.len() {
                    // An update of no column: nothing to send.
                    runs.push(start..end);
                    spans.push(from..from);
                    continue;
                }
                spans.push(from..self.sql.len());
                runs.push(start..end);
                if end - start > 1 {
                    break;
                }
            }
            let sent: Vec<Range<usize>> = spans.iter().filter(|s| !s.is_empty()).cloned().collect();
            let retry = writes.iter().all(|w| w.table.transactional);
            let mut answers = self.run_writes(&sent, retry).await.into_iter();
            for (run, span) in runs.into_iter().zip(spans) {
                if span.is_empty() {
                    results.push(Ok(1));
                    continue;
                }
                let answer = answers
                    .next()
                    .unwrap_or_else(|| Err(StorageError::Unavailable("no answer".into())));
                match answer {
                    Ok(ok) if run.len() == 1 => results.push(Ok(found(&writes[run.start], &ok))),
                    Ok(_) => results.extend(run.map(|_| Ok(1))),
                    Err(e) if run.len() > 1 && !matches!(self.txn, Txn::Doomed(_)) => {
                        tracing::debug!(rows = run.len(), error = %e, "merged UPDATE failed; its rows go one by one");
                        self.sql.clear();
                        let mut spans = Vec::with_capacity(run.len());
                        for w in &writes[run.clone()] {
                            let from = self.sql.len();
                            push_write(w, &mut self.sql);
                            spans.push(from..self.sql.len());
                        }
                        let answers = self.run_writes(&spans, retry).await;
                        for (w, answer) in writes[run].iter().zip(answers) {
                            results.push(answer.map(|ok| found(w, &ok)));
                        }
                    }
                    Err(e) => results.extend(run.map(|_| Err(e.clone()))),
                }
            }
        }
        results
    }
}

/// The rows a write's statement found: its own count for a write by key;
/// a row named by its locator was read before, so it is there.
fn found(write: &RowWrite<'_>, ok: &OkPacket) -> u64 {
    match write.target {
        RowTarget::Key { .. } => ok.affected_rows,
        RowTarget::Locator(_) => 1,
    }
}

/// vtgate refuses an UPDATE that sets a vindex column, even to the value
/// it has (VT12001, 1235). A write names its row by key or locator values;
/// a column of those (a whole column, not a prefix) set to the very bytes
/// the row is found by is left out of the SET: it would not change. The
/// columns and values kept, when any were left out.
pub(super) fn without_unchanged_keys<'a>(
    w: &RowWrite<'a>,
) -> Option<(Vec<usize>, Vec<WriteValue<'a>>)> {
    let Change::Update { columns, values } = w.change else {
        return None;
    };
    // (column, the bytes the row is found by)
    let finders: Vec<(usize, Option<&[u8]>)> = match w.target {
        RowTarget::Key { index, keys } => {
            let meta = index.index_meta();
            meta.key_columns
                .iter()
                .zip(keys)
                .zip(&meta.key_prefix)
                .filter_map(|((c, k), prefix)| c.filter(|_| prefix.is_none()).map(|c| (c, *k)))
                .collect()
        }
        RowTarget::Locator(locator) => locator
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let name = w.table.locator_sql.get(i)?;
                let c = w.table.columns.iter().position(|c| &c.name_sql == name)?;
                Some((c, v.as_deref()))
            })
            .collect(),
    };
    let unchanged = |c: usize, v: &WriteValue<'_>| {
        finders.iter().any(|&(fc, k)| {
            fc == c
                && match v {
                    WriteValue::Bytes(b) => *b == k,
                    // `+ 0` on the column.
                    WriteValue::Int(n) => k == Some(n.to_string().as_bytes()),
                }
        })
    };
    if !columns.iter().zip(values).any(|(&c, v)| unchanged(c, v)) {
        return None;
    }
    Some(
        columns
            .iter()
            .zip(values)
            .filter(|(&c, v)| !unchanged(c, v))
            .map(|(&c, v)| (c, *v))
            .unzip(),
    )
}
