//! Integration tests against the fake server: pipelining order, send/recv,
//! framing (CR before LF, escaped values), timeouts and misuse errors.

mod common;

use std::time::Duration;

use common::{answer, ok, text, Action, FakeServer};
use hs_client::{Client, ClientError, ClientOptions, Find, ResponseExt};

fn key_of(r: &hs_client::Response) -> String {
    String::from_utf8(r.values[0].clone().expect("not NULL")).expect("utf8")
}

#[tokio::test]
async fn pipeline_answers_in_order() {
    let server = FakeServer::start(|_, line| ok(line)).await;
    let mut c = Client::connect(server.addr).await.expect("connect");
    let lines: Vec<Vec<u8>> = (0..300)
        .map(|i| Find::new(0, "=", &[format!("k{i}")]).to_line())
        .collect();
    let responses = c.pipeline(&lines).await.expect("pipeline");
    assert_eq!(responses.len(), 300);
    for (i, r) in responses.iter().enumerate() {
        assert!(r.is_ok());
        assert_eq!(key_of(r), format!("k{i}"));
    }
    assert_eq!(server.seen(), vec![lines]);
    assert!(c.pipeline::<Vec<u8>>(&[]).await.expect("empty").is_empty());
}

#[tokio::test]
async fn large_pipeline_reads_while_writing() {
    // 3000 answers of 4 KiB: far more than the socket buffers hold, so a
    // client that wrote everything before reading would deadlock.
    let big = vec![b'v'; 4096];
    let server = FakeServer::start(move |_, _| {
        let mut out = b"0\t1\t".to_vec();
        out.extend_from_slice(&big);
        out.push(b'\n');
        Action::Reply(out)
    })
    .await;
    let opts = ClientOptions::new().request_timeout(Some(Duration::from_secs(60)));
    let mut c = Client::connect_with(server.addr, opts)
        .await
        .expect("connect");
    let key = vec![b'k'; 2000];
    let lines: Vec<Vec<u8>> = (0..3000)
        .map(|_| Find::new(0, "=", &[&key]).to_line())
        .collect();
    let responses = c.pipeline(&lines).await.expect("pipeline");
    assert_eq!(responses.len(), 3000);
    assert!(responses
        .iter()
        .all(|r| r.values[0].as_ref().map(Vec::len) == Some(4096)));
}

#[tokio::test]
async fn send_recv_keeps_requests_in_flight() {
    let server = FakeServer::start(|_, line| ok(line)).await;
    let mut c = Client::connect(server.addr).await.expect("connect");
    let mut next_sent = 0;
    let mut next_recv = 0;
    for burst in [10, 5, 20, 1] {
        for _ in 0..burst {
            c.send(&Find::new(0, "=", &[next_sent.to_string()]).to_line())
                .await
                .expect("send");
            next_sent += 1;
        }
        assert_eq!(c.in_flight(), next_sent - next_recv);
        // Leave a few in flight across bursts.
        while c.in_flight() > 3 {
            let r = c.recv().await.expect("recv");
            assert_eq!(key_of(&r), next_recv.to_string());
            next_recv += 1;
        }
    }
    while c.in_flight() > 0 {
        let r = c.recv().await.expect("recv");
        assert_eq!(key_of(&r), next_recv.to_string());
        next_recv += 1;
    }
    assert_eq!(next_recv, 36);
}

#[tokio::test]
async fn cr_before_lf_and_escapes_are_handled() {
    let server = FakeServer::start(|_, line| match line {
        b"0\t=\t1\tcr" => Action::Reply(b"0\t1\tx\r\n".to_vec()),
        b"0\t=\t1\tesc" => Action::Reply(b"0\t2\ta\x01\x49b\t\x00\t\t\x01\x40\r\n".to_vec()),
        // Pipelined answers, one with CR and one without.
        b"0\t=\t1\ttwo" => Action::Reply(b"0\t1\tp\r\n".to_vec()),
        _ => Action::Reply(b"0\t1\tq\n".to_vec()),
    })
    .await;
    let mut c = Client::connect(server.addr).await.expect("connect");
    let r = c.find(&Find::new(0, "=", &["cr"])).await.expect("find");
    assert_eq!((r.code, r.ncols), (0, 1));
    assert_eq!(r.values, vec![Some(b"x".to_vec())]);

    let r = c.find(&Find::new(0, "=", &["esc"])).await.expect("find");
    assert_eq!(
        r.into_rows(),
        vec![
            vec![Some(b"a\tb".to_vec()), None],
            vec![Some(Vec::new()), Some(vec![0u8])]
        ]
    );

    let lines = [
        Find::new(0, "=", &["two"]).to_line(),
        Find::new(0, "=", &["x"]).to_line(),
    ];
    let rs = c.pipeline(&lines).await.expect("pipeline");
    assert_eq!(rs[0].values, vec![Some(b"p".to_vec())]);
    assert_eq!(rs[1].values, vec![Some(b"q".to_vec())]);
}

#[tokio::test]
async fn raw_requests_are_sent_as_given() {
    let server = FakeServer::start(|_, line| match line {
        b"" | b"bogus" => Action::Reply(b"2\t1\tcmd\n".to_vec()),
        _ => ok(line),
    })
    .await;
    let mut c = Client::connect(server.addr).await.expect("connect");
    let r = c.request(b"bogus").await.expect("request");
    assert_eq!((r.code, r.reason().as_deref()), (2, Some("cmd")));
    assert!(matches!(
        r.check(),
        Err(ClientError::Server { code: 2, ref reason }) if reason == "cmd"
    ));
    assert_eq!(c.request(b"").await.expect("empty line").code, 2);
    // A trailing CR is sent as is; a trailing LF is not doubled.
    c.request(b"0\t=\t1\tk\r").await.expect("cr");
    c.request(b"0\t=\t1\tk\n").await.expect("lf");
    assert!(matches!(
        c.request(b"0\t=\t1\ta\nb").await,
        Err(ClientError::Protocol(_))
    ));
    assert_eq!(
        text(&server.seen()[0]),
        vec!["bogus", "", "0|=|1|k\r", "0|=|1|k"]
    );
}

#[tokio::test]
async fn typed_helpers_send_spec_lines() {
    let server = FakeServer::start(|_, line| ok(line)).await;
    let opts = ClientOptions::new().auth_secret("se\tcret");
    let mut c = Client::connect_with(server.addr, opts)
        .await
        .expect("connect");
    c.open_index(
        1,
        "test",
        "user",
        "PRIMARY",
        &["name", "email"],
        &["created"],
    )
    .await
    .expect("open")
    .check()
    .expect("ok");
    c.insert(1, &[Some("jane"), None, Some("")])
        .await
        .expect("insert");
    c.find(
        &Find::new(1, ">=", &["a"])
            .limit(2)
            .filter('W', "<", 0, "2020"),
    )
    .await
    .expect("find");
    c.auth("other").await.expect("auth");
    let seen = server.seen();
    assert_eq!(
        seen[0],
        vec![
            b"A\t1\tse\x01\x49cret".to_vec(),
            b"P\t1\ttest\tuser\tPRIMARY\tname,email\tcreated".to_vec(),
            b"1\t+\t3\tjane\t\x00\t".to_vec(),
            b"1\t>=\t1\ta\t2\t0\tW\t<\t0\t2020".to_vec(),
            b"A\t1\tother".to_vec(),
        ]
    );
}

#[tokio::test]
async fn malformed_response_is_a_protocol_error() {
    let server = FakeServer::start(|conn, line| match conn {
        0 => Action::Reply(b"hello world\n".to_vec()),
        _ => ok(line),
    })
    .await;
    let mut c = Client::connect(server.addr).await.expect("connect");
    let err = c.request(b"0\t=\t1\tk").await.expect_err("garbage");
    assert!(matches!(err, ClientError::Protocol(_)), "{err:?}");
    // The stream was out of step, so the client reconnected for the next call.
    let r = c.request(b"0\t=\t1\tk").await.expect("after reconnect");
    assert_eq!(key_of(&r), "k");
    assert_eq!(c.reconnects(), 1);
}

#[tokio::test]
async fn timeout_drops_the_connection() {
    let server = FakeServer::start(|conn, line| match conn {
        0 => Action::Silent,
        _ => ok(line),
    })
    .await;
    let opts = ClientOptions::new().request_timeout(Some(Duration::from_millis(500)));
    let mut c = Client::connect_with(server.addr, opts)
        .await
        .expect("connect");
    let err = c.request(b"0\t=\t1\tslow").await.expect_err("timeout");
    assert!(matches!(err, ClientError::Timeout), "{err:?}");
    assert!(!c.is_connected());
    let r = c.request(b"0\t=\t1\tfast").await.expect("next");
    assert_eq!(key_of(&r), "fast");
    assert_eq!(server.connections(), 2);
}

#[tokio::test]
async fn misuse_is_reported() {
    let server = FakeServer::start(|_, line| Action::Reply(answer(line))).await;
    let mut c = Client::connect(server.addr).await.expect("connect");
    assert!(matches!(c.recv().await, Err(ClientError::Protocol(_))));
    c.send(b"0\t=\t1\ta").await.expect("send");
    assert!(matches!(
        c.request(b"0\t=\t1\tb").await,
        Err(ClientError::Protocol(_))
    ));
    assert_eq!(key_of(&c.recv().await.expect("recv")), "a");
    assert_eq!(
        key_of(&c.request(b"0\t=\t1\tb").await.expect("now idle")),
        "b"
    );
}

#[tokio::test]
async fn connect_refused_is_io() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let err = Client::connect(addr).await.expect_err("refused");
    assert!(matches!(err, ClientError::Io(_)), "{err:?}");
}

#[tokio::test]
async fn failed_auth_on_connect_is_handshake() {
    let server = FakeServer::start(|_, line| match line {
        b"A\t1\tgood" => Action::Reply(b"0\t1\n".to_vec()),
        _ => Action::Reply(b"3\t1\tunauth\n".to_vec()),
    })
    .await;
    let err = Client::connect_with(server.addr, ClientOptions::new().auth_secret("bad"))
        .await
        .expect_err("refused");
    match err {
        ClientError::Handshake { what, code, reason } => {
            assert_eq!(
                (what.as_str(), code, reason.as_str()),
                ("auth", 3, "unauth")
            );
            assert!(!format!("{}", ClientError::Handshake { what, code, reason }).contains("bad"));
        }
        other => panic!("{other:?}"),
    }
    Client::connect_with(server.addr, ClientOptions::new().auth_secret("good"))
        .await
        .expect("good secret");
}
