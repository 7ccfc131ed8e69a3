//! A bridged application read through the `atspi` crate's own client
//! proxies (what Rust ATs such as Odilia use), on the real bus stack: the
//! answers come from the replica, typed as the crate expects them, and
//! errors are D-Bus errors the proxies report.

use atspi::proxy::accessible::AccessibleProxy;
use atspi::proxy::action::ActionProxy;
use atspi::proxy::application::ApplicationProxy;
use atspi::proxy::cache::CacheProxy;
use atspi::proxy::component::ComponentProxy;
use atspi::proxy::text::TextProxy;
use atspi::proxy::value::ValueProxy;
use atspi::{CoordType, Granularity, Role, State};
use newton_e2e::{fixture, Bridge, SessionOptions, TestSession};

const APP: &str = "Newton basic demo";
const ROOT: &str = "/org/a11y/atspi/accessible/root";

async fn accessible<'a>(
    conn: &zbus::Connection,
    bus: &'a str,
    path: &'a str,
) -> AccessibleProxy<'a> {
    AccessibleProxy::builder(conn)
        .destination(bus)
        .and_then(|b| b.path(path))
        .expect("valid proxy address")
        .cache_properties(zbus::proxy::CacheProperties::No)
        .build()
        .await
        .expect("accessible proxy")
}

/// The bridged application's bus name, found on the registry's desktop.
async fn find_app(conn: &zbus::Connection) -> String {
    let desktop = accessible(conn, "org.a11y.atspi.Registry", ROOT).await;
    for child in desktop.get_children().await.expect("desktop children") {
        let Some(bus) = child.name_as_str().map(str::to_owned) else {
            continue;
        };
        let app = accessible(conn, &bus, ROOT).await;
        if app.name().await.ok().as_deref() == Some(APP) {
            return bus;
        }
    }
    panic!("{APP} is not on the desktop");
}

/// Depth-first search for the object named `name`; returns its path.
async fn path_of(conn: &zbus::Connection, bus: &str, name: &str) -> String {
    let mut stack = vec![ROOT.to_owned()];
    while let Some(path) = stack.pop() {
        let proxy = accessible(conn, bus, &path).await;
        if proxy.name().await.ok().as_deref() == Some(name) && path != ROOT {
            return path;
        }
        for child in proxy.get_children().await.expect("children") {
            stack.push(child.path_as_str().to_owned());
        }
    }
    panic!("no object named {name}");
}

#[test]
fn the_atspi_crate_proxies_read_the_replica() {
    let mut session =
        TestSession::start(SessionOptions::default()).expect("start the test session");
    let bridge = Bridge::start(&mut session).expect("start the bridge");
    let replay = bridge
        .replay_and_stay(
            &mut session,
            "replay",
            &fixture("generated-small/basic.jsonl"),
            APP,
        )
        .expect("replay the basic fixture");
    let address = session.a11y_bus_address().expect("a11y bus").to_owned();

    async_io::block_on(async {
        let conn = zbus::connection::Builder::address(address.as_str())
            .expect("address")
            .build()
            .await
            .expect("connect to the a11y bus");
        let bus = find_app(&conn).await;

        let app = ApplicationProxy::builder(&conn)
            .destination(bus.as_str())
            .and_then(|b| b.path(ROOT))
            .expect("address")
            .build()
            .await
            .expect("application proxy");
        assert_eq!(
            app.toolkit_name().await.expect("ToolkitName"),
            "newton-fixtures"
        );

        let ok = path_of(&conn, &bus, "OK").await;
        let button = accessible(&conn, &bus, &ok).await;
        assert_eq!(button.get_role().await.expect("GetRole"), Role::Button);
        let states = button.get_state().await.expect("GetState");
        assert!(
            states.contains(State::Focusable) && states.contains(State::Enabled),
            "{states:?}"
        );
        let parent = button.parent().await.expect("Parent");
        let frame = accessible(&conn, &bus, parent.path_as_str()).await;
        assert_eq!(frame.name().await.expect("frame Name"), "Demo");
        let index = button
            .get_index_in_parent()
            .await
            .expect("GetIndexInParent");
        let again = frame
            .get_child_at_index(index)
            .await
            .expect("GetChildAtIndex");
        assert_eq!(
            again.path_as_str(),
            ok,
            "GetChildAtIndex(GetIndexInParent) is the object itself"
        );

        let component = ComponentProxy::builder(&conn)
            .destination(bus.as_str())
            .and_then(|b| b.path(ok.as_str()))
            .expect("address")
            .build()
            .await
            .expect("component");
        let (sx, sy, sw, sh) = component
            .get_extents(CoordType::Screen)
            .await
            .expect("screen extents");
        let (wx, wy, ww, wh) = component
            .get_extents(CoordType::Window)
            .await
            .expect("window extents");
        assert_eq!((sw, sh), (ww, wh));
        assert_eq!(
            (sx - wx, sy - wy),
            (100, 50),
            "screen = window + the compositor's surface origin"
        );

        let action = ActionProxy::builder(&conn)
            .destination(bus.as_str())
            .and_then(|b| b.path(ok.as_str()))
            .expect("address")
            .build()
            .await
            .expect("action");
        let names: Vec<String> = action
            .get_actions()
            .await
            .expect("GetActions")
            .into_iter()
            .map(|a| a.name)
            .collect();
        assert!(names.contains(&"click".to_owned()), "{names:?}");

        let entry = path_of(&conn, &bus, "Name").await;
        let text = TextProxy::builder(&conn)
            .destination(bus.as_str())
            .and_then(|b| b.path(entry.as_str()))
            .expect("address")
            .build()
            .await
            .expect("text");
        assert_eq!(text.get_text(0, -1).await.expect("GetText"), "hello!");
        let (word, start, end) = text
            .get_string_at_offset(1, Granularity::Word)
            .await
            .expect("GetStringAtOffset");
        // The fixture's run has one word start (0): "hello!" is one word.
        assert_eq!((word.as_str(), start, end), ("hello!", 0, 6));

        let slider = path_of(&conn, &bus, "Volume").await;
        let value = ValueProxy::builder(&conn)
            .destination(bus.as_str())
            .and_then(|b| b.path(slider.as_str()))
            .expect("address")
            .build()
            .await
            .expect("value");
        assert_eq!(value.current_value().await.expect("CurrentValue"), 55.0);

        let cache = CacheProxy::builder(&conn)
            .destination(bus.as_str())
            .and_then(|b| b.path("/org/a11y/atspi/cache"))
            .expect("address")
            .build()
            .await
            .expect("cache");
        let items = cache.get_items().await.expect("GetItems");
        // atspi-common calls the accessible name `short_name` (the wire's
        // `s` after the interfaces) and the description `name`.
        let item = items
            .iter()
            .find(|i| i.object.path_as_str() == ok)
            .expect("the button is cached");
        assert_eq!((item.short_name.as_str(), item.role), ("OK", Role::Button));

        let gone = accessible(&conn, &bus, "/org/a11y/atspi/accessible/1_999999").await;
        let error = gone
            .name()
            .await
            .expect_err("an unknown object is an error");
        assert!(
            error.to_string().contains("Object does not exist at path"),
            "{error}"
        );
    });

    session.stop(replay.pid, std::time::Duration::from_secs(10));
    let report = session.shutdown();
    assert!(report.is_clean(), "processes survived teardown: {report:?}");
}
