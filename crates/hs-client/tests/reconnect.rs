//! Integration tests for reconnect: the client re-sends the remembered `A`
//! and `P` lines, in order, on a new connection; reads are retried, writes
//! are never sent twice.

mod common;

use std::time::Duration;

use common::{is_find, is_insert, ok, text, Action, FakeServer};
use hs_client::{Client, ClientError, ClientOptions, Find};

fn lines(v: &[&[u8]]) -> Vec<Vec<u8>> {
    v.iter().map(|l| l.to_vec()).collect()
}

#[tokio::test]
async fn read_is_retried_after_replaying_auth_and_indexes() {
    // Connection 0 dies on the first find; later connections behave.
    let server = FakeServer::start(|conn, line| match conn {
        0 if is_find(line) => Action::Drop,
        _ => ok(line),
    })
    .await;
    let opts = ClientOptions::new().auth_secret("s3cret");
    let mut c = Client::connect_with(server.addr, opts)
        .await
        .expect("connect");
    c.open_index(5, "db", "t5", "PRIMARY", &["a"], &[])
        .await
        .expect("P5");
    c.open_index(0, "db", "t0", "PRIMARY", &["a"], &[])
        .await
        .expect("P0");
    c.open_index(1, "db", "t1", "i1", &["x", "y"], &["f"])
        .await
        .expect("P1");
    // Re-opening id 0 replaces what is remembered for it.
    c.open_index(0, "db", "t0", "PRIMARY", &["b"], &[])
        .await
        .expect("P0'");

    let r = c
        .find(&Find::new(1, "=", &["key"]))
        .await
        .expect("retried find");
    assert_eq!(r.values, vec![Some(b"key".to_vec())]);
    assert_eq!(c.reconnects(), 1);
    assert_eq!(c.opened_indexes(), vec![0, 1, 5]);

    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        text(&seen[0]),
        vec![
            "A|1|s3cret",
            "P|5|db|t5|PRIMARY|a",
            "P|0|db|t0|PRIMARY|a",
            "P|1|db|t1|i1|x,y|f",
            "P|0|db|t0|PRIMARY|b",
            "1|=|1|key",
        ]
    );
    assert_eq!(
        text(&seen[1]),
        vec![
            "A|1|s3cret",
            "P|0|db|t0|PRIMARY|b",
            "P|1|db|t1|i1|x,y|f",
            "P|5|db|t5|PRIMARY|a",
            "1|=|1|key",
        ]
    );
}

#[tokio::test]
async fn write_is_not_retried_but_next_call_reconnects() {
    let server = FakeServer::start(|conn, line| match conn {
        0 if is_insert(line) => Action::Drop,
        _ => ok(line),
    })
    .await;
    let mut c = Client::connect(server.addr).await.expect("connect");
    c.open_index(0, "db", "t", "", &["a"], &[])
        .await
        .expect("P");
    let err = c.insert(0, &["v"]).await.expect_err("write must fail");
    assert!(err.is_connection_lost(), "{err:?}");
    // A find-and-modify is a write too, but this one goes to a healthy
    // connection after the reconnect.
    let r = c
        .find(&Find::new(0, "=", &["1"]).modify("U", &["v"]))
        .await
        .expect("modify on new connection");
    assert!(r.is_ok());

    let seen = server.seen();
    let inserts: usize = seen.iter().flatten().filter(|l| is_insert(l)).count();
    assert_eq!(inserts, 1, "the insert must never be sent twice");
    assert_eq!(text(&seen[0]), vec!["P|0|db|t||a", "0|+|1|v"]);
    assert_eq!(text(&seen[1]), vec!["P|0|db|t||a", "0|=|1|1|1|0|U|v"]);
}

#[tokio::test]
async fn modify_is_not_retried() {
    // Connections 0 and 1 die on any find; connection 2 behaves.
    let server = FakeServer::start(|conn, line| match conn {
        0 | 1 if is_find(line) => Action::Drop,
        _ => ok(line),
    })
    .await;
    let mut c = Client::connect(server.addr).await.expect("connect");
    let err = c
        .find(&Find::new(0, "=", &["1"]).modify_op("D"))
        .await
        .expect_err("write must fail");
    assert!(err.is_connection_lost(), "{err:?}");
    assert_eq!(server.connections(), 1);
    // The raw-line path classifies the same way: reconnects, is dropped, and
    // is not sent a second time.
    let err = c
        .request(b"0\t=\t1\t1\t1\t0\t+?\t5")
        .await
        .expect_err("raw write");
    assert!(err.is_connection_lost(), "{err:?}");
    assert_eq!(server.connections(), 2);
    let r = c
        .request(b"0\t=\t1\t1")
        .await
        .expect("read on connection 2");
    assert!(r.is_ok());
    let seen = server.seen();
    assert_eq!(text(&seen[0]), vec!["0|=|1|1|1|0|D"]);
    assert_eq!(text(&seen[1]), vec!["0|=|1|1|1|0|+?|5"]);
    assert_eq!(text(&seen[2]), vec!["0|=|1|1"]);
}

#[tokio::test]
async fn idle_close_is_noticed_before_a_write() {
    // The server closes connection 0 right after answering the P (like an
    // idle timeout); the insert must go to a fresh connection, not fail.
    let server = FakeServer::start(|conn, line| match conn {
        0 => Action::ReplyThenClose(common::answer(line)),
        _ => ok(line),
    })
    .await;
    let mut c = Client::connect(server.addr).await.expect("connect");
    c.open_index(0, "db", "t", "PRIMARY", &["a"], &[])
        .await
        .expect("P");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let r = c.insert(0, &["v"]).await.expect("insert after idle close");
    assert_eq!(r.values, vec![Some(b"1".to_vec())]);
    assert_eq!(c.reconnects(), 1);
    let seen = server.seen();
    assert_eq!(text(&seen[0]), vec!["P|0|db|t|PRIMARY|a"]);
    assert_eq!(text(&seen[1]), vec!["P|0|db|t|PRIMARY|a", "0|+|1|v"]);
}

#[tokio::test]
async fn reconnect_disabled_means_closed() {
    let server = FakeServer::start(|conn, line| match conn {
        0 if is_find(line) => Action::Drop,
        _ => ok(line),
    })
    .await;
    let opts = ClientOptions::new().reconnect(false);
    let mut c = Client::connect_with(server.addr, opts)
        .await
        .expect("connect");
    let err = c
        .find(&Find::new(0, "=", &["1"]))
        .await
        .expect_err("dropped");
    assert!(err.is_connection_lost(), "{err:?}");
    assert!(matches!(
        c.find(&Find::new(0, "=", &["1"])).await,
        Err(ClientError::Closed)
    ));
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn failed_open_and_failed_auth_are_not_replayed() {
    let server = FakeServer::start(|conn, line| match (conn, line) {
        (_, b"P\t9\tdb\tmissing\tPRIMARY\ta") => Action::Reply(b"1\t1\topen_table\n".to_vec()),
        (_, b"A\t1\twrong") => Action::Reply(b"3\t1\tunauth\n".to_vec()),
        (0, l) if is_find(l) => Action::Drop,
        _ => ok(line),
    })
    .await;
    let opts = ClientOptions::new().auth_secret("right");
    let mut c = Client::connect_with(server.addr, opts)
        .await
        .expect("connect");
    c.open_index(0, "db", "t", "PRIMARY", &["a"], &[])
        .await
        .expect("P0");
    let r = c
        .open_index(9, "db", "missing", "PRIMARY", &["a"], &[])
        .await
        .expect("P9 answered");
    assert_eq!(r.code, 1);
    // A refused A leaves the connection unauthenticated: nothing to replay.
    assert_eq!(c.auth("wrong").await.expect("A answered").code, 3);
    c.find(&Find::new(0, "=", &["k"])).await.expect("retried");
    assert_eq!(
        text(&server.seen()[1]),
        vec!["P|0|db|t|PRIMARY|a", "0|=|1|k"]
    );
}

#[tokio::test]
async fn refused_replay_is_a_handshake_error_and_is_retried_later() {
    // Connection 1 refuses the re-open (table briefly unavailable).
    let server = FakeServer::start(|conn, line| match conn {
        0 if is_find(line) => Action::Drop,
        1 => Action::Reply(b"1\t1\topen_table\n".to_vec()),
        _ => ok(line),
    })
    .await;
    let mut c = Client::connect(server.addr).await.expect("connect");
    c.open_index(3, "db", "t", "PRIMARY", &["a"], &[])
        .await
        .expect("P3");
    let err = c
        .find(&Find::new(3, "=", &["k"]))
        .await
        .expect_err("replay refused");
    match err {
        ClientError::Handshake { what, code, reason } => {
            assert_eq!(
                (what.as_str(), code, reason.as_str()),
                ("open_index 3", 1, "open_table")
            );
        }
        other => panic!("{other:?}"),
    }
    let r = c
        .find(&Find::new(3, "=", &["k"]))
        .await
        .expect("third connection");
    assert!(r.is_ok());
    let seen = server.seen();
    assert_eq!(seen.len(), 3);
    assert_eq!(text(&seen[1]), vec!["P|3|db|t|PRIMARY|a"]);
    assert_eq!(text(&seen[2]), vec!["P|3|db|t|PRIMARY|a", "3|=|1|k"]);
}

#[tokio::test]
async fn read_only_pipeline_is_retried_mixed_one_is_not() {
    let server = FakeServer::start(|conn, line| match (conn, line) {
        (0 | 2, b"0\t=\t1\tb") => Action::Drop,
        _ => ok(line),
    })
    .await;
    let mut c = Client::connect(server.addr).await.expect("connect");
    c.open_index(0, "db", "t", "PRIMARY", &["a"], &[])
        .await
        .expect("P");
    let reads = [
        b"0\t=\t1\ta".to_vec(),
        b"0\t=\t1\tb".to_vec(),
        b"0\t=\t1\tc".to_vec(),
    ];
    let rs = c.pipeline(&reads).await.expect("retried pipeline");
    assert_eq!(rs.len(), 3);
    assert_eq!(rs[2].values, vec![Some(b"c".to_vec())]);
    assert_eq!(
        text(&server.seen()[1]),
        vec!["P|0|db|t|PRIMARY|a", "0|=|1|a", "0|=|1|b", "0|=|1|c"]
    );

    // A fresh client gets connection 2, which drops on "b" again; this
    // time the batch holds an insert, so it must not be retried.
    drop(c);
    let mut c = Client::connect(server.addr).await.expect("connect 2");
    let mixed = [b"0\t+\t1\tx".to_vec(), b"0\t=\t1\tb".to_vec()];
    let err = c.pipeline(&mixed).await.expect_err("not retried");
    assert!(err.is_connection_lost(), "{err:?}");
    assert_eq!(server.connections(), 3);
    let inserts: usize = server
        .seen()
        .iter()
        .flatten()
        .filter(|l| is_insert(l))
        .count();
    assert_eq!(inserts, 1);
}

#[tokio::test]
async fn in_flight_requests_fail_in_order_when_the_connection_breaks() {
    let server = FakeServer::start(|conn, line| match (conn, line) {
        (0, b"0\t=\t1\t2") => Action::Drop,
        _ => ok(line),
    })
    .await;
    let mut c = Client::connect(server.addr).await.expect("connect");
    for k in ["1", "2", "3"] {
        c.send(&Find::new(0, "=", &[k]).to_line())
            .await
            .expect("send");
    }
    assert_eq!(
        c.recv().await.expect("first").values,
        vec![Some(b"1".to_vec())]
    );
    assert!(c.recv().await.expect_err("second").is_connection_lost());
    assert_eq!(c.in_flight(), 1);
    // A new send reconnects; the lost request is still reported first.
    c.send(b"0\t=\t1\t4").await.expect("send after break");
    assert!(matches!(c.recv().await, Err(ClientError::Closed)));
    assert_eq!(
        c.recv().await.expect("fourth").values,
        vec![Some(b"4".to_vec())]
    );
    assert_eq!(c.in_flight(), 0);
    assert_eq!(lines(&[b"0\t=\t1\t4"]), server.seen()[1]);
}

#[tokio::test]
async fn closed_client_stays_closed() {
    let server = FakeServer::start(|_, line| ok(line)).await;
    let mut c = Client::connect(server.addr).await.expect("connect");
    c.close().await;
    assert!(matches!(
        c.request(b"0\t=\t1\tk").await,
        Err(ClientError::Closed)
    ));
    assert!(matches!(
        c.send(b"0\t=\t1\tk").await,
        Err(ClientError::Closed)
    ));
}
