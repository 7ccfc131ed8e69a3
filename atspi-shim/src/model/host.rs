//! Facts about the host the daemon passes in: the session locale and the
//! D-Bus machine id. The shim reads no environment and no files; the daemon
//! gathers these once at start-up ([`HostFacts::new`] normalizes them).

/// The environment variables, in priority order, whose first non-empty value
/// is the session locale for LC_MESSAGES-like categories.
pub const LOCALE_VARIABLES: [&str; 3] = ["LC_ALL", "LC_MESSAGES", "LANG"];

/// Where the D-Bus machine id is kept, in the order D-Bus looks.
pub const MACHINE_ID_FILES: [&str; 2] = ["/etc/machine-id", "/var/lib/dbus/machine-id"];

/// The host facts answers depend on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFacts {
    /// The session locale ("en_US.UTF-8"), "C" when none is set. The bridge
    /// cannot know an application's own locale, so the session's is the best
    /// guess (`Application.GetLocale`).
    locale: String,
    /// `Accessible.Locale` fallback: the locale without encoding or modifier
    /// ("en_US"); "" for "C"/"POSIX".
    object_locale: String,
    /// `Peer.GetMachineId`: 32 hex digits.
    machine_id: String,
}

impl HostFacts {
    /// `locale_values`: the values of [`LOCALE_VARIABLES`] in order (unset as
    /// `None`); `machine_id_texts`: the contents of [`MACHINE_ID_FILES`] that
    /// could be read. The first non-empty locale wins, else "C"; the first
    /// well-formed machine id wins, else 32 zeros.
    pub fn new<L, M>(locale_values: L, machine_id_texts: M) -> Self
    where
        L: IntoIterator<Item = Option<String>>,
        M: IntoIterator<Item = String>,
    {
        let locale = locale_values
            .into_iter()
            .flatten()
            .find(|value| !value.is_empty())
            .unwrap_or_else(|| "C".to_owned());
        let base = locale.split(['.', '@']).next().unwrap_or("");
        let object_locale = if base == "C" || base == "POSIX" {
            String::new()
        } else {
            base.to_owned()
        };
        let machine_id = machine_id_texts
            .into_iter()
            .map(|text| text.trim().to_owned())
            .find(|id| id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()))
            .unwrap_or_else(|| "0".repeat(32));
        HostFacts {
            locale,
            object_locale,
            machine_id,
        }
    }

    pub fn locale(&self) -> &str {
        &self.locale
    }

    pub fn object_locale(&self) -> &str {
        &self.object_locale
    }

    pub fn machine_id(&self) -> &str {
        &self.machine_id
    }
}

impl Default for HostFacts {
    /// The "C" locale and the placeholder machine id.
    fn default() -> Self {
        HostFacts::new([], [])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_non_empty_locale_wins() {
        let host = HostFacts::new(
            [
                None,
                Some(String::new()),
                Some("de_DE.UTF-8@euro".to_owned()),
            ],
            [],
        );
        assert_eq!(host.locale(), "de_DE.UTF-8@euro");
        assert_eq!(host.object_locale(), "de_DE");
    }

    #[test]
    fn c_and_posix_have_no_object_locale() {
        assert_eq!(HostFacts::default().locale(), "C");
        assert_eq!(HostFacts::default().object_locale(), "");
        let posix = HostFacts::new([Some("POSIX".to_owned())], []);
        assert_eq!(posix.object_locale(), "");
    }

    #[test]
    fn only_a_well_formed_machine_id_is_used() {
        let good = "0123456789abcdef0123456789ABCDEF";
        let host = HostFacts::new([], ["short\n".to_owned(), format!("{good}\n")]);
        assert_eq!(host.machine_id(), good);
        assert_eq!(HostFacts::default().machine_id(), "0".repeat(32));
    }
}
