//! What the executor hands a request's answer to: rows and outcomes as
//! values, which each protocol front encodes its own way (HandlerSocket's
//! encoder is `crate::hs_answer`, the one place that writes its answer
//! lines). The executor never sees the encoding: it calls these methods in
//! the order a request's answer is made, and asks only how many bytes the
//! answer holds (answers are bounded by `--max-response-bytes`).
//!
//! An implementation encodes as it is called, straight into its own
//! buffer: rows are never collected into lists on the way.

use hs_proto::ErrorKind;

/// One request's answer, as a protocol front encodes it. A value of it
/// travels with the request from the executor back to the front.
pub(crate) trait Answer: Send + 'static {
    /// An empty answer with room for about `bytes` bytes.
    fn with_capacity(bytes: usize) -> Self;

    /// Rows follow, `columns` values each (a find, or a modify's `?` form:
    /// the rows before their change).
    fn begin_rows(&mut self, columns: usize);

    /// The next value of the current row: its bytes, or `None` for NULL.
    fn value(&mut self, value: Option<&[u8]>);

    /// Every row was given.
    fn end_rows(&mut self);

    /// A write that answers no rows was done.
    fn done(&mut self, done: Done);

    /// The request failed: nothing else is in its answer. `kind` carries
    /// the error number a storage failure shows clients
    /// (`ErrorKind::Storage`), or the request's own fault.
    fn failed(&mut self, kind: ErrorKind);

    /// Bytes the answer holds so far.
    fn len(&self) -> usize;

    /// Whether the answer is a failure (for the metrics).
    fn is_failure(&self) -> bool;
}

/// What a write that answers no rows came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Done {
    /// A modify: how many rows it changed (or deleted).
    Modified(u64),
    /// An insert, and the auto-increment id it has.
    Inserted(InsertId),
}

/// The auto-increment id of an inserted row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InsertId {
    /// The table has no auto-increment column.
    None,
    /// The row gave the column a value of its own.
    Given,
    /// The id the database generated.
    Generated(u64),
}

/// An answer that is only `kind`.
pub(crate) fn failure<A: Answer>(kind: ErrorKind) -> A {
    let mut answer = A::with_capacity(0);
    answer.failed(kind);
    answer
}

#[cfg(test)]
mod tests {
    //! The executor answering through a sink of another protocol's kind:
    //! one that records what it is handed, as values.
    use super::*;
    use crate::exec::testing::{open, store, write_task};
    use crate::exec::{run_reads, run_writes, ReadTask, WriteLimits, WriteOutcome, WriteTask};
    use hs_proto::{parse_request, IndexOperation, Request};
    use hsd_storage::{Backend, StorageConn, WriteBatching};

    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Event {
        Rows(usize),
        Value(Option<Vec<u8>>),
        End,
        Done(Done),
        Failed(ErrorKind),
    }

    #[derive(Debug, Default)]
    struct Recorded {
        events: Vec<Event>,
        bytes: usize,
    }

    impl Answer for Recorded {
        fn with_capacity(_: usize) -> Self {
            Recorded::default()
        }
        fn begin_rows(&mut self, columns: usize) {
            self.events.push(Event::Rows(columns));
        }
        fn value(&mut self, value: Option<&[u8]>) {
            self.bytes += value.map_or(0, <[u8]>::len);
            self.events.push(Event::Value(value.map(<[u8]>::to_vec)));
        }
        fn end_rows(&mut self) {
            self.events.push(Event::End);
        }
        fn done(&mut self, done: Done) {
            self.events.push(Event::Done(done));
        }
        fn failed(&mut self, kind: ErrorKind) {
            self.events.push(Event::Failed(kind));
        }
        fn len(&self) -> usize {
            self.bytes
        }
        fn is_failure(&self) -> bool {
            matches!(self.events.last(), Some(Event::Failed(_)))
        }
    }

    fn find(index: &std::sync::Arc<hsd_storage::OpenedIndex>, line: &str) -> ReadTask<Recorded> {
        let Ok(Request::Exec(exec)) = parse_request(line.as_bytes()) else {
            panic!("not a request: {line:?}");
        };
        match exec.operation() {
            Ok(IndexOperation::Find(f)) => ReadTask::new(index.clone(), f),
            other => panic!("not a find: {other:?}"),
        }
    }

    fn value(s: &str) -> Event {
        Event::Value(Some(s.as_bytes().to_vec()))
    }

    #[test]
    fn rows_nulls_counts_and_failures_reach_the_sink_as_values() {
        let (store, table) = store(WriteBatching::OneAtATime);
        // id, u (NULL for id 4), s
        let index = open(&table, 1, 0, &[0, 1, 3], &[]);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let mut c = store.connect().await.expect("connect");
            let mut tasks = vec![
                find(&index, "1\t=\t1\t4"),
                find(&index, "1\t=\t2\t1\t2"),
                find(&index, "1\t=\t1\t99"),
            ];
            run_reads(&mut c, &mut tasks, &[0, 0, 0], 1 << 20).await;
            let events: Vec<&[Event]> = tasks.iter().map(|t| &t.out.events[..]).collect();
            assert_eq!(
                events,
                [
                    &[
                        Event::Rows(3),
                        value("4"),
                        Event::Value(None),
                        value("s4"),
                        Event::End
                    ][..],
                    &[Event::Failed(ErrorKind::KpNum)][..],
                    &[Event::Rows(3), Event::End][..],
                ]
            );
            assert!(tasks[1].out.is_failure() && !tasks[0].out.is_failure());

            let writes: Vec<WriteTask> = vec![
                write_task(&index, "1\t>=\t1\t6\t10\t0\tD"),
                write_task(&index, "1\t+\t3\t9\t90\ts9"),
            ];
            let refs: Vec<&WriteTask> = writes.iter().collect();
            c.begin().await.expect("begin");
            let limits = WriteLimits {
                max_answer: 1 << 20,
                walk_time: None,
                walk_rows: crate::exec::MAX_WALK_ROWS,
                walk_slice: None,
                walk_whole_rows: 0,
            };
            let outcomes: Vec<WriteOutcome<Recorded>> = run_writes(&mut c, &refs, &limits).await;
            assert!(c.commit().await.failure.is_none());
            let events: Vec<Vec<Event>> = outcomes
                .into_iter()
                .map(|o| match o {
                    WriteOutcome::Answered(a) => a.events,
                    other => panic!("unexpected {other:?}"),
                })
                .collect();
            assert_eq!(
                events,
                [
                    vec![Event::Done(Done::Modified(3))],
                    vec![Event::Done(Done::Inserted(InsertId::None))],
                ]
            );
        });
    }
}
