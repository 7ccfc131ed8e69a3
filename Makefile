# Build and install the Newton → AT-SPI bridge with its session integration, and the C library
# for toolkits (libnewton_producer, its header and newton-producer.pc; docs/c-api.md).
#
#   make                                      # release binary, man pages, completions, unit files, C library
#   make install PREFIX=/usr/local DESTDIR=   # install them (DESTDIR for staging)
#   make uninstall PREFIX=/usr/local
#   make deb                                  # a .deb (needs cargo-deb)
#   make vendor                               # vendor/: every locked crate, for offline builds
#   make CARGOFLAGS="--offline --config vendor/config.toml"   # build from vendor/ (see README)
#
# Every cargo invocation passes --locked: Cargo.lock is what was tested.
#
# Paths follow the GNU conventions; override any of them on the command line.

PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
SYSTEMDUSERUNITDIR ?= $(PREFIX)/lib/systemd/user
SYSTEMDUSERPRESETDIR ?= $(PREFIX)/lib/systemd/user-preset
DBUSSERVICEDIR ?= $(DATADIR)/dbus-1/services
# Autostart entries are only read from the XDG config dirs, /etc/xdg by default.
SYSCONFDIR ?= /etc
AUTOSTARTDIR ?= $(SYSCONFDIR)/xdg/autostart
BASHCOMPLETIONDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPLETIONDIR ?= $(DATADIR)/zsh/site-functions
FISHCOMPLETIONDIR ?= $(DATADIR)/fish/vendor_completions.d
# The default diff allow rules (accesskit_unix against the bridge).
PKGDATADIR ?= $(DATADIR)/newton-atspi-bridge
# The C library (capi/): shared and static library, header, pkg-config file.
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig

CARGO ?= cargo
CARGOFLAGS ?=
CARGO_TARGET_DIR ?= target
NAME := newton-atspi-bridge
DBUS_NAME := org.freedesktop.a11y.NewtonBridge
PRESET := 80-$(NAME).preset
# The units the preset enables; the .deb's postinst enables the same ones.
ENABLED_UNITS = $(shell sed -n 's/^enable[[:space:]]\{1,\}//p' packaging/$(PRESET))
BIN := $(CARGO_TARGET_DIR)/release/$(NAME)
# The C library's package, the files cargo builds (the Rust library is newton_producer_c) and the
# ABI version its SONAME carries (libnewton_producer.so.ABI; capi/build.rs).
CAPI := newton-producer-c
CLIB_SO := $(CARGO_TARGET_DIR)/release/libnewton_producer_c.so
CLIB_A := $(CARGO_TARGET_DIR)/release/libnewton_producer_c.a
CLIB_ABI := $(shell sed -n 's/^const ABI_VERSION: u32 = \([0-9]*\);/\1/p' capi/build.rs)
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
# Under target/release/ so cargo-deb finds the generated files (see tools/Cargo.toml).
GEN := $(CARGO_TARGET_DIR)/release/packaging

INSTALL ?= install
SUBSTITUTE = sed -e 's|@bindir@|$(BINDIR)|g'

.PHONY: all build generate install uninstall deb vendor clean

all: build generate

# One cargo run for both, so they share every dependency's build.
build:
	$(CARGO) build --release --locked -p $(NAME) -p $(CAPI) $(CARGOFLAGS)

$(BIN):
	$(CARGO) build --release --locked -p $(NAME) -p $(CAPI) $(CARGOFLAGS)

$(CLIB_SO) $(CLIB_A):
	$(CARGO) build --release --locked -p $(CAPI) $(CARGOFLAGS)

# The unit files depend on BINDIR, so they are rewritten every time.
generate: $(BIN)
	rm -rf $(GEN)
	mkdir -p $(GEN)/man $(GEN)/completions
	$(BIN) generate-manpages $(GEN)/man >/dev/null
	$(BIN) generate-completions $(GEN)/completions >/dev/null
	$(SUBSTITUTE) packaging/$(NAME).service.in > $(GEN)/$(NAME).service
	$(SUBSTITUTE) packaging/$(NAME).socket.in > $(GEN)/$(NAME).socket
	$(SUBSTITUTE) packaging/$(DBUS_NAME).service.in > $(GEN)/$(DBUS_NAME).service
	$(SUBSTITUTE) packaging/$(NAME).desktop.in > $(GEN)/$(NAME).desktop
	cp packaging/$(PRESET) $(GEN)/$(PRESET)
	mkdir -p $(GEN)/debian
	for script in postinst postrm; do \
	    sed -e 's|@units@|$(ENABLED_UNITS)|g' packaging/debian/$$script.in > $(GEN)/debian/$$script; \
	done
	sed -e 's|@prefix@|$(PREFIX)|g' -e 's|@libdir@|$(LIBDIR)|g' -e 's|@includedir@|$(INCLUDEDIR)|g' \
	    -e 's|@version@|$(VERSION)|g' capi/newton-producer.pc.in > $(GEN)/newton-producer.pc

install: generate $(CLIB_SO) $(CLIB_A)
	$(INSTALL) -Dm755 $(BIN) $(DESTDIR)$(BINDIR)/$(NAME)
	$(INSTALL) -Dm644 $(GEN)/$(NAME).service $(DESTDIR)$(SYSTEMDUSERUNITDIR)/$(NAME).service
	$(INSTALL) -Dm644 $(GEN)/$(NAME).socket $(DESTDIR)$(SYSTEMDUSERUNITDIR)/$(NAME).socket
	$(INSTALL) -Dm644 $(GEN)/$(PRESET) $(DESTDIR)$(SYSTEMDUSERPRESETDIR)/$(PRESET)
	$(INSTALL) -Dm644 $(GEN)/$(DBUS_NAME).service $(DESTDIR)$(DBUSSERVICEDIR)/$(DBUS_NAME).service
	$(INSTALL) -Dm644 $(GEN)/$(NAME).desktop $(DESTDIR)$(AUTOSTARTDIR)/$(NAME).desktop
	$(INSTALL) -d $(DESTDIR)$(MANDIR)/man1
	$(INSTALL) -m644 $(GEN)/man/*.1 $(DESTDIR)$(MANDIR)/man1/
	$(INSTALL) -Dm644 $(GEN)/completions/$(NAME) $(DESTDIR)$(BASHCOMPLETIONDIR)/$(NAME)
	$(INSTALL) -Dm644 $(GEN)/completions/_$(NAME) $(DESTDIR)$(ZSHCOMPLETIONDIR)/_$(NAME)
	$(INSTALL) -Dm644 $(GEN)/completions/$(NAME).fish $(DESTDIR)$(FISHCOMPLETIONDIR)/$(NAME).fish
	$(INSTALL) -Dm644 docs/compat-rules.json $(DESTDIR)$(PKGDATADIR)/compat-rules.json
	$(INSTALL) -Dm755 $(CLIB_SO) $(DESTDIR)$(LIBDIR)/libnewton_producer.so.$(CLIB_ABI)
	ln -sf libnewton_producer.so.$(CLIB_ABI) $(DESTDIR)$(LIBDIR)/libnewton_producer.so
	$(INSTALL) -Dm644 $(CLIB_A) $(DESTDIR)$(LIBDIR)/libnewton_producer.a
	$(INSTALL) -Dm644 capi/include/newton_producer.h $(DESTDIR)$(INCLUDEDIR)/newton_producer.h
	$(INSTALL) -Dm644 $(GEN)/newton-producer.pc $(DESTDIR)$(PKGCONFIGDIR)/newton-producer.pc

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/$(NAME)
	rm -f $(DESTDIR)$(SYSTEMDUSERUNITDIR)/$(NAME).service
	rm -f $(DESTDIR)$(SYSTEMDUSERUNITDIR)/$(NAME).socket
	rm -f $(DESTDIR)$(SYSTEMDUSERPRESETDIR)/$(PRESET)
	rm -f $(DESTDIR)$(DBUSSERVICEDIR)/$(DBUS_NAME).service
	rm -f $(DESTDIR)$(AUTOSTARTDIR)/$(NAME).desktop
	rm -f $(DESTDIR)$(MANDIR)/man1/$(NAME).1 $(DESTDIR)$(MANDIR)/man1/$(NAME)-*.1
	rm -f $(DESTDIR)$(BASHCOMPLETIONDIR)/$(NAME)
	rm -f $(DESTDIR)$(ZSHCOMPLETIONDIR)/_$(NAME)
	rm -f $(DESTDIR)$(FISHCOMPLETIONDIR)/$(NAME).fish
	rm -f $(DESTDIR)$(PKGDATADIR)/compat-rules.json
	-rmdir $(DESTDIR)$(PKGDATADIR) 2>/dev/null
	rm -f $(DESTDIR)$(LIBDIR)/libnewton_producer.so.$(CLIB_ABI) $(DESTDIR)$(LIBDIR)/libnewton_producer.so
	rm -f $(DESTDIR)$(LIBDIR)/libnewton_producer.a
	rm -f $(DESTDIR)$(INCLUDEDIR)/newton_producer.h
	rm -f $(DESTDIR)$(PKGCONFIGDIR)/newton-producer.pc

# The .deb installs into /usr; its file list is [package.metadata.deb] in tools/Cargo.toml. It
# does not ship the C library: Debian wants a shared library in a package of its own
# (libnewton-producer0, plus -dev for the header, .a and .pc); `make install` installs it.
# Debian wants compressed man pages and a stripped binary (the release profile keeps
# debug info for backtraces; DEBFLAGS=--dbgsym moves it to a -dbgsym package instead).
DEBFLAGS ?= --strip
# --no-build: package the release binary `generate` just built instead of
# letting cargo-deb compile it a second time.
deb:
	$(MAKE) generate PREFIX=/usr
	gzip -9nf $(GEN)/man/*.1
	gzip -9nc CHANGELOG.md > $(GEN)/changelog.gz
	gzip -9nc packaging/debian/changelog > $(GEN)/changelog.Debian.gz
	$(CARGO) deb -p $(NAME) --no-build --locked $(DEBFLAGS) $(CARGOFLAGS)

# Every crate in Cargo.lock (all platforms) under vendor/NAME-VERSION, and
# vendor/config.toml pointing cargo at it: `--config vendor/config.toml
# --offline` then builds without the registry.
vendor:
	$(CARGO) vendor --locked --versioned-dirs vendor > .vendor-config.toml.tmp || { rm -f .vendor-config.toml.tmp; exit 1; }
	mv .vendor-config.toml.tmp vendor/config.toml

clean:
	rm -rf $(GEN)
