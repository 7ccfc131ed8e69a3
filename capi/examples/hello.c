/*
 * hello.c: a window with a push button and a check box, made accessible to screen readers
 * through libnewton_producer and newton-atspi-bridge. There is no real window: this is what a
 * toolkit's accessibility layer would send for one (docs/c-api.md).
 *
 *   cc hello.c $(pkg-config --cflags --libs newton-producer) -o hello
 *   ./hello [APP_NAME]        # with a bridge running (newton-atspi-bridge serve)
 *
 * It pushes the window's tree, then answers what screen readers ask: a "focus" action moves the
 * focus, a "click" presses the button or toggles the check box; each is printed as one line
 * ("focus Enable feature", "toggled true", "clicked OK"). SIGTERM or SIGINT ends it with a goodbye.
 *
 * Real toolkits parse the bridge's JSON messages with their JSON library (json-glib,
 * QJsonDocument); this example picks the two fields it needs out of the text to stay
 * dependency-free.
 */

#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <newton_producer.h>

enum { SURFACE = 1 };
enum { WINDOW = 1, OK_BUTTON = 2, CHECK_BOX = 3, STATUS = 4 };
/* Bits of a node's "actions" (docs/schema/vocabulary.md). */
enum { ACTION_CLICK = 1, ACTION_FOCUS = 2 };

static const char *app_name = "Newton C hello";
static uint64_t focus = OK_BUTTON;
static int checked;
static int presses;
static volatile sig_atomic_t stop;

static void on_signal(int signal_number) {
    (void)signal_number;
    stop = 1;
}

static int report(const char *what, NewtonStatus status) {
    const char *message = newton_last_error_message();
    fprintf(stderr, "hello: %s: %s: %s\n", what, newton_status_name(status),
            message ? message : "(no message)");
    return 1;
}

/* Appends `text` to `out` as a JSON string (quotes, backslashes and control characters
 * escaped); the caller's buffer is large enough for this example's short names. */
static void json_string(char *out, size_t size, const char *text) {
    size_t used = strlen(out);
    if (used + 1 < size) out[used++] = '"';
    for (const unsigned char *c = (const unsigned char *)text; *c && used + 8 < size; c++) {
        if (*c == '"' || *c == '\\') {
            out[used++] = '\\';
            out[used++] = (char)*c;
        } else if (*c < 0x20) {
            used += (size_t)snprintf(out + used, size - used, "\\u%04x", *c);
        } else {
            out[used++] = (char)*c;
        }
    }
    if (used + 1 < size) out[used++] = '"';
    out[used] = '\0';
}

/* One node: [id,{"role":…,"actions":…,"childActions":0,"flags":0,"properties":{…}}]. */
static void append_node(char *out, size_t size, uint64_t id, const char *role, int actions,
                        const char *properties) {
    size_t used = strlen(out);
    snprintf(out + used, size - used,
             "%s[%" PRIu64 ",{\"role\":\"%s\",\"actions\":%d,\"childActions\":0,\"flags\":0,"
             "\"properties\":{%s}}]",
             used > 0 && out[used - 1] == ']' ? "," : "", id, role, actions, properties);
}

static void window_node(char *out, size_t size) {
    char properties[512] = "\"label\":";
    json_string(properties, sizeof properties, app_name);
    strncat(properties,
            ",\"children\":[2,3,4],\"bounds\":{\"x0\":0.0,\"y0\":0.0,\"x1\":400.0,\"y1\":300.0}",
            sizeof properties - strlen(properties) - 1);
    append_node(out, size, WINDOW, "window", 0, properties);
}

static void button_node(char *out, size_t size) {
    append_node(out, size, OK_BUTTON, "button", ACTION_CLICK | ACTION_FOCUS,
                "\"label\":\"OK\",\"bounds\":{\"x0\":20.0,\"y0\":20.0,\"x1\":140.0,\"y1\":60.0}");
}

static void check_box_node(char *out, size_t size) {
    char properties[256];
    snprintf(properties, sizeof properties,
             "\"label\":\"Enable feature\",\"toggled\":\"%s\","
             "\"bounds\":{\"x0\":20.0,\"y0\":80.0,\"x1\":220.0,\"y1\":110.0}",
             checked ? "true" : "false");
    append_node(out, size, CHECK_BOX, "checkBox", ACTION_CLICK | ACTION_FOCUS, properties);
}

static void status_node(char *out, size_t size) {
    char properties[256];
    if (presses == 0) {
        snprintf(properties, sizeof properties, "\"value\":\"Not pressed yet\"");
    } else {
        snprintf(properties, sizeof properties, "\"value\":\"Pressed %d time%s\"", presses,
                 presses == 1 ? "" : "s");
    }
    strncat(properties, ",\"bounds\":{\"x0\":20.0,\"y0\":130.0,\"x1\":380.0,\"y1\":160.0}",
            sizeof properties - strlen(properties) - 1);
    append_node(out, size, STATUS, "label", 0, properties);
}

/* Sends `nodes` (a comma-separated list of [id,node] pairs) as one update and commits it. A full
 * tree (the first one, and whenever the bridge asks) names the root. */
static NewtonStatus push(NewtonProducer producer, const char *nodes, int full_tree) {
    char update[4096];
    snprintf(update, sizeof update,
             "{\"nodes\":[%s],\"tree\":%s,\"treeId\":\"00000000-0000-0000-0000-000000000000\","
             "\"focus\":%" PRIu64 "}",
             nodes,
             full_tree ? "{\"root\":1,\"toolkitName\":\"hello.c\",\"toolkitVersion\":null}"
                       : "null",
             focus);
    NewtonStatus status = newton_producer_update(producer, SURFACE, update);
    if (status != NEWTON_STATUS_OK) return status;
    return newton_producer_commit(producer, SURFACE, NULL);
}

static NewtonStatus push_full_tree(NewtonProducer producer) {
    char nodes[3072] = "";
    window_node(nodes, sizeof nodes);
    button_node(nodes, sizeof nodes);
    check_box_node(nodes, sizeof nodes);
    status_node(nodes, sizeof nodes);
    return push(producer, nodes, 1);
}

/* The text after `key` in `json` up to the next quote, into `out` ("" when absent). */
static void string_after(const char *json, const char *key, char *out, size_t size) {
    const char *at = strstr(json, key);
    out[0] = '\0';
    if (!at) return;
    at += strlen(key);
    size_t length = strcspn(at, "\"");
    if (length >= size) length = size - 1;
    memcpy(out, at, length);
    out[length] = '\0';
}

static const char *node_name(uint64_t node) {
    switch (node) {
    case OK_BUTTON: return "OK";
    case CHECK_BOX: return "Enable feature";
    default: return "?";
    }
}

/* One message from the bridge. */
static NewtonStatus handle(NewtonProducer producer, const char *message) {
    char nodes[2048] = "";
    if (strncmp(message, "{\"action\":", 10) == 0) {
        char action[64];
        string_after(message, "\"request\":{\"action\":\"", action, sizeof action);
        const char *target = strstr(message, "\"targetNode\":");
        uint64_t node = target ? strtoull(target + 13, NULL, 10) : 0;
        if (strcmp(action, "focus") == 0 && (node == OK_BUTTON || node == CHECK_BOX)) {
            focus = node;
            printf("focus %s\n", node_name(node));
            /* The focus is a field of every update; no node changed. */
            return push(producer, "", 0);
        }
        if (strcmp(action, "click") == 0 && node == OK_BUTTON) {
            presses++;
            printf("clicked OK\n");
            status_node(nodes, sizeof nodes);
            return push(producer, nodes, 0);
        }
        if (strcmp(action, "click") == 0 && node == CHECK_BOX) {
            checked = !checked;
            printf("toggled %s\n", checked ? "true" : "false");
            check_box_node(nodes, sizeof nodes);
            return push(producer, nodes, 0);
        }
        printf("ignored %s on %" PRIu64 "\n", action, node);
    } else if (strncmp(message, "{\"updatesWanted\":", 17) == 0) {
        printf("tree requested\n");
        return push_full_tree(producer);
    } else if (strncmp(message, "{\"rejected\":", 12) == 0) {
        /* The bridge refused a commit; with "resync":true it needs a full tree. */
        fprintf(stderr, "hello: %s\n", message);
        if (strstr(message, "\"resync\":true")) return push_full_tree(producer);
    }
    /* Anything else (updatesUnwanted, keyHandled, a newer bridge's messages) needs nothing. */
    return NEWTON_STATUS_OK;
}

int main(int argc, char **argv) {
    if (argc > 1) app_name = argv[1];
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    setvbuf(stdout, NULL, _IOLBF, 0);

    NewtonProducer producer = {0};
    NewtonStatus status = newton_producer_connect(NULL, "org.newton.CHello", app_name, 0,
                                                  "hello.c", newton_producer_version(), &producer);
    if (status != NEWTON_STATUS_OK) return report("connect", status);
    int failed = 0;
    if ((status = newton_producer_create_surface(producer, SURFACE, app_name)) != NEWTON_STATUS_OK ||
        (status = newton_producer_geometry(producer, SURFACE, 100, 50, 400, 300, 1.0)) !=
            NEWTON_STATUS_OK ||
        (status = push_full_tree(producer)) != NEWTON_STATUS_OK ||
        (status = newton_producer_focus(producer, SURFACE)) != NEWTON_STATUS_OK) {
        failed = report("pushing the window", status);
        goto out;
    }
    uint32_t rejected = 0;
    if ((status = newton_producer_sync(producer, 10000, &rejected)) != NEWTON_STATUS_OK) {
        failed = report("sync", status);
        goto out;
    }
    if (rejected > 0) {
        fprintf(stderr, "hello: the bridge rejected the window's tree (see the message above)\n");
        failed = 1;
        goto out;
    }
    printf("ready\n");

    int fd = -1;
    if ((status = newton_producer_fd(producer, &fd)) != NEWTON_STATUS_OK) {
        failed = report("fd", status);
        goto out;
    }
    while (!stop) {
        struct pollfd readable = {.fd = fd, .events = POLLIN};
        int ready = poll(&readable, 1, -1);
        if (ready < 0) {
            if (errno == EINTR) continue;
            perror("hello: poll");
            failed = 1;
            break;
        }
        for (;;) {
            char *message = NULL;
            status = newton_producer_poll(producer, &message);
            if (status == NEWTON_STATUS_NO_MESSAGE) break;
            if (status != NEWTON_STATUS_OK) {
                failed = report("poll", status); /* the bridge went away */
                goto out;
            }
            status = handle(producer, message);
            newton_string_free(message);
            if (status != NEWTON_STATUS_OK) {
                failed = report("answering the bridge", status);
                goto out;
            }
        }
    }
out:
    /* Goodbye: the application leaves the desktop. */
    newton_producer_destroy(producer);
    printf("goodbye\n");
    return failed;
}
