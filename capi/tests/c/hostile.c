/*
 * The C API under hostile and ordinary use, from C: NULL pointers, strings that are not UTF-8,
 * bad JSON, made-up, zeroed and destroyed handles, foreign and twice-freed strings, bad key
 * events, a connection the bridge drops (SIGPIPE is left at its default, which kills a process
 * writing to a closed socket) — each must come back as a status and a message. Then the ordinary
 * calls against capi/tests/c_abi.rs's stand-in bridge: action requests, sync with a rejection,
 * keys (consumed and not), the descriptor, the wanted state.
 *
 *   hostile SOCKET_PATH       (run by capi/tests/c_abi.rs; exit status 0 when every check held)
 *
 * Each check prints "ok  NAME: STATUS: MESSAGE" or "FAIL NAME: ..."; the test shows them all.
 */

#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <newton_producer.h>

static int failures;

static void check(int ok, const char *name, NewtonStatus status) {
    const char *message = newton_last_error_message();
    printf("%s %s: %s: %s\n", ok ? "ok  " : "FAIL", name, newton_status_name(status),
           message ? message : "(no message)");
    if (!ok) failures++;
}

/* `call` must return `want`, with a message naming the function (NULL after OK). */
#define EXPECT(want, call)                                                                       \
    do {                                                                                         \
        NewtonStatus got_ = (call);                                                              \
        const char *message_ = newton_last_error_message();                                      \
        int ok_ = got_ == (want) &&                                                              \
                  ((want) == NEWTON_STATUS_OK ? message_ == NULL                                 \
                                              : message_ != NULL && strstr(message_, "newton_")); \
        check(ok_, #call, got_);                                                                 \
    } while (0)

static int readable(int fd, int timeout_ms) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

static const char *TREE =
    "{\"nodes\":[[1,{\"role\":\"window\",\"actions\":0,\"childActions\":0,\"flags\":0,"
    "\"properties\":{\"label\":\"Hostile\",\"children\":[2]}}],"
    "[2,{\"role\":\"button\",\"actions\":3,\"childActions\":0,\"flags\":0,"
    "\"properties\":{\"label\":\"OK\"}}]],"
    "\"tree\":{\"root\":1,\"toolkitName\":null,\"toolkitVersion\":null},"
    "\"treeId\":\"00000000-0000-0000-0000-000000000000\",\"focus\":2}";

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: hostile SOCKET_PATH\n");
        return 2;
    }
    const char *socket_path = argv[1];
    NewtonProducer p = {0};
    NewtonProducer zero = {0};
    NewtonProducer made_up = {.id = 0x5eed5eed};
    char *json = NULL;
    bool flag = false;
    uint64_t serial = 0;
    uint32_t rejected = 99;
    int fd = -1;

    /* Connecting with bad arguments: nothing happens, the out parameter is untouched. */
    EXPECT(NEWTON_STATUS_NULL_ARGUMENT,
           newton_producer_connect(socket_path, "org.example.Hostile", "Hostile", 0, NULL, NULL,
                                   NULL));
    EXPECT(NEWTON_STATUS_NULL_ARGUMENT,
           newton_producer_connect(socket_path, NULL, "Hostile", 0, NULL, NULL, &p));
    EXPECT(NEWTON_STATUS_NULL_ARGUMENT,
           newton_producer_connect(socket_path, "org.example.Hostile", NULL, 0, NULL, NULL, &p));
    EXPECT(NEWTON_STATUS_INVALID_ARGUMENT,
           newton_producer_connect(socket_path, "org.example.\xff\xfe", "Hostile", 0, NULL, NULL,
                                   &p));
    EXPECT(NEWTON_STATUS_INVALID_ARGUMENT,
           newton_producer_connect(socket_path, "org.example.Hostile", "Hostile", 0,
                                   "kit\xc3\x28", NULL, &p));
    EXPECT(NEWTON_STATUS_INVALID_ARGUMENT,
           newton_producer_connect(socket_path, "  ", "Hostile", 0, NULL, NULL, &p));
    EXPECT(NEWTON_STATUS_NO_BRIDGE,
           newton_producer_connect("/nonexistent/newton/bridge.sock", "org.example.Hostile",
                                   "Hostile", 0, NULL, NULL, &p));
    check(p.id == 0, "a failed connect leaves the handle untouched", NEWTON_STATUS_OK);
    /* A misaligned out pointer is refused, not written through. */
    unsigned char bytes[2 * sizeof(NewtonProducer)];
    EXPECT(NEWTON_STATUS_INVALID_ARGUMENT,
           newton_producer_connect(socket_path, "org.example.Hostile", "Hostile", 0, NULL, NULL,
                                   (NewtonProducer *)(void *)(bytes + 1)));

    /* Handles that are not live connections. */
    EXPECT(NEWTON_STATUS_INVALID_HANDLE, newton_producer_create_surface(zero, 1, "x"));
    EXPECT(NEWTON_STATUS_INVALID_HANDLE, newton_producer_update(made_up, 1, TREE));
    EXPECT(NEWTON_STATUS_INVALID_HANDLE, newton_producer_commit(made_up, 1, &serial));
    EXPECT(NEWTON_STATUS_INVALID_HANDLE, newton_producer_poll(made_up, &json));
    check(json == NULL, "poll on a bad handle sets its out parameter to NULL", NEWTON_STATUS_OK);
    EXPECT(NEWTON_STATUS_INVALID_HANDLE, newton_producer_destroy(zero));
    EXPECT(NEWTON_STATUS_INVALID_HANDLE, newton_producer_fd(made_up, &fd));

    /* Library information. */
    check(strcmp(newton_status_name(NEWTON_STATUS_CLOSED), "NEWTON_STATUS_CLOSED") == 0,
          "newton_status_name(CLOSED)", NEWTON_STATUS_OK);
    check(strcmp(newton_status_name(12345), "NEWTON_STATUS_UNKNOWN") == 0,
          "newton_status_name(12345)", NEWTON_STATUS_OK);
    check(strncmp(newton_producer_accesskit_version(), "0.25.", 5) == 0,
          "newton_producer_accesskit_version", NEWTON_STATUS_OK);

    /* Strings the library did not hand out. */
    char on_stack[] = "not the library's";
    char *from_malloc = strdup("not the library's either");
    EXPECT(NEWTON_STATUS_OK, newton_string_free(NULL));
    EXPECT(NEWTON_STATUS_INVALID_ARGUMENT, newton_string_free(on_stack));
    EXPECT(NEWTON_STATUS_INVALID_ARGUMENT, newton_string_free(from_malloc));
    free(from_malloc); /* still ours: the library left it alone */

    /* A real connection to the stand-in bridge. */
    EXPECT(NEWTON_STATUS_OK,
           newton_producer_connect(socket_path, "org.example.Hostile", "Hostile", 0, "hostile.c",
                                   "1", &p));
    if (p.id == 0) {
        printf("FAIL no connection; the remaining checks need one\n");
        return 1;
    }
    EXPECT(NEWTON_STATUS_OK, newton_producer_fd(p, &fd));
    EXPECT(NEWTON_STATUS_OK, newton_producer_create_surface(p, 1, "Hostile"));
    EXPECT(NEWTON_STATUS_OK, newton_producer_create_surface(p, 2, NULL));

    /* Bad tree updates never reach the wire. */
    EXPECT(NEWTON_STATUS_NULL_ARGUMENT, newton_producer_update(p, 1, NULL));
    EXPECT(NEWTON_STATUS_INVALID_JSON, newton_producer_update(p, 1, "not json"));
    EXPECT(NEWTON_STATUS_INVALID_JSON, newton_producer_update(p, 1, "[1, 2, 3]"));
    EXPECT(NEWTON_STATUS_INVALID_JSON, newton_producer_update(p, 1, "{\"nodes\":[]}"));
    EXPECT(NEWTON_STATUS_INVALID_JSON,
           newton_producer_update(
               p, 1,
               "{\"nodes\":[[1,{\"role\":\"noSuchRole\",\"actions\":0,\"childActions\":0,"
               "\"flags\":0,\"properties\":{}}]],\"tree\":null,"
               "\"treeId\":\"00000000-0000-0000-0000-000000000000\",\"focus\":1}"));
    EXPECT(NEWTON_STATUS_INVALID_ARGUMENT, newton_producer_update(p, 1, "{\"nodes\":\xff}"));
    /* A million open brackets: refused as JSON, no stack overflow. */
    size_t deep = 1000000;
    char *nested = malloc(deep + 1);
    memset(nested, '[', deep);
    nested[deep] = '\0';
    EXPECT(NEWTON_STATUS_INVALID_JSON, newton_producer_update(p, 1, nested));
    free(nested);
    EXPECT(NEWTON_STATUS_INVALID_ARGUMENT,
           newton_producer_geometry(p, 1, 0, 0, 10, 10, NAN));
    EXPECT(NEWTON_STATUS_INVALID_ARGUMENT, newton_producer_geometry(p, 1, 0, 0, 10, 10, 0.0));
    EXPECT(NEWTON_STATUS_NULL_ARGUMENT, newton_producer_poll(p, NULL));
    EXPECT(NEWTON_STATUS_NULL_ARGUMENT, newton_producer_is_wanted(p, 1, NULL));

    /* The ordinary calls. */
    EXPECT(NEWTON_STATUS_OK, newton_producer_geometry(p, 1, 10, 20, 300, 200, 1.0));
    EXPECT(NEWTON_STATUS_OK, newton_producer_update(p, 1, TREE));
    EXPECT(NEWTON_STATUS_OK, newton_producer_commit(p, 1, &serial));
    check(serial > 0, "commit returns a serial", NEWTON_STATUS_OK);
    EXPECT(NEWTON_STATUS_OK, newton_producer_sync(p, 10000, &rejected));
    check(rejected == 0, "no rejection", NEWTON_STATUS_OK);
    EXPECT(NEWTON_STATUS_OK, newton_producer_is_wanted(p, 1, &flag));
    check(flag, "surface 1 is wanted (the stand-in sent updatesWanted)", NEWTON_STATUS_OK);
    EXPECT(NEWTON_STATUS_OK, newton_producer_is_wanted(p, 9, &flag));
    check(!flag, "surface 9 is not wanted", NEWTON_STATUS_OK);
    /* A commit on a surface never created: the stand-in rejects it, as the bridge does. */
    EXPECT(NEWTON_STATUS_OK, newton_producer_commit(p, 7, NULL));
    EXPECT(NEWTON_STATUS_OK, newton_producer_sync(p, 10000, &rejected));
    check(rejected == 1, "the sync counted one rejection", NEWTON_STATUS_OK);
    check(readable(fd, 0), "the descriptor is readable while messages wait", NEWTON_STATUS_OK);

    /* Messages so far: updatesWanted for surfaces 1 and 2, then the rejection. */
    int wanted = 0, rejections = 0;
    for (;;) {
        NewtonStatus got = newton_producer_poll(p, &json);
        if (got == NEWTON_STATUS_NO_MESSAGE) {
            check(json == NULL && newton_last_error_message() != NULL, "poll: nothing waits",
                  got);
            break;
        }
        if (got != NEWTON_STATUS_OK) {
            check(0, "poll", got);
            break;
        }
        printf("     message %s\n", json);
        if (strstr(json, "{\"updatesWanted\":")) wanted++;
        if (strstr(json, "{\"rejected\":") && strstr(json, "\"unknown-surface\"")) rejections++;
        char *copy = json;
        EXPECT(NEWTON_STATUS_OK, newton_string_free(json));
        /* Freeing the same string twice is refused, not a double free. */
        EXPECT(NEWTON_STATUS_INVALID_ARGUMENT, newton_string_free(copy));
    }
    check(wanted == 2 && rejections == 1, "two updatesWanted and one rejected were polled",
          NEWTON_STATUS_OK);
    check(!readable(fd, 0), "the descriptor is quiet once every message was taken",
          NEWTON_STATUS_OK);

    /* Focus makes the stand-in ask for a click, as an AT's DoAction would. */
    EXPECT(NEWTON_STATUS_OK, newton_producer_focus(p, 1));
    check(readable(fd, 10000), "the action request wakes the descriptor", NEWTON_STATUS_OK);
    EXPECT(NEWTON_STATUS_OK, newton_producer_wait(p, 10000, &json));
    check(json && strstr(json, "{\"action\":{\"surface\":1,\"request\":{\"action\":\"click\"") &&
              strstr(json, "\"targetNode\":2"),
          "the action request arrives as JSON", NEWTON_STATUS_OK);
    if (json) printf("     message %s\n", json);
    EXPECT(NEWTON_STATUS_OK, newton_string_free(json));
    EXPECT(NEWTON_STATUS_TIMEOUT, newton_producer_wait(p, 50, &json));
    check(json == NULL, "a wait that times out sets NULL", NEWTON_STATUS_OK);
    EXPECT(NEWTON_STATUS_OK, newton_producer_unfocus(p));

    /* Keys: the stand-in consumes KP_Enter and lets everything else through. */
    EXPECT(NEWTON_STATUS_OK, newton_producer_accepts_keys(p, &flag));
    check(flag, "the stand-in forwards keys", NEWTON_STATUS_OK);
    NewtonKeyEvent key = {.kind = NEWTON_KEY_PRESS, .keysym = 0xff8d, .keycode = 104};
    EXPECT(NEWTON_STATUS_OK, newton_producer_key_wait(p, &key, 10000, &flag));
    check(flag, "KP_Enter was consumed", NEWTON_STATUS_OK);
    key.keysym = 0x61;
    key.keycode = 38;
    key.text = "a";
    EXPECT(NEWTON_STATUS_OK, newton_producer_key_wait(p, &key, 10000, &flag));
    check(!flag, "'a' was not consumed", NEWTON_STATUS_OK);
    EXPECT(NEWTON_STATUS_OK, newton_producer_key(p, &key, &serial));
    EXPECT(NEWTON_STATUS_OK, newton_producer_wait(p, 10000, &json));
    char expected[96];
    snprintf(expected, sizeof expected,
             "{\"keyHandled\":{\"serial\":%" PRIu64 ",\"consumed\":false}}", serial);
    check(json && strcmp(json, expected) == 0, "the key's answer arrives with its serial",
          NEWTON_STATUS_OK);
    EXPECT(NEWTON_STATUS_OK, newton_string_free(json));
    EXPECT(NEWTON_STATUS_NULL_ARGUMENT, newton_producer_key(p, NULL, NULL));
    key.kind = 7;
    EXPECT(NEWTON_STATUS_INVALID_ARGUMENT, newton_producer_key(p, &key, NULL));
    key.kind = NEWTON_KEY_RELEASE;
    key.text = "\xff";
    EXPECT(NEWTON_STATUS_INVALID_ARGUMENT, newton_producer_key(p, &key, NULL));
    EXPECT(NEWTON_STATUS_NULL_ARGUMENT, newton_producer_key_wait(p, &key, 10, NULL));

    /* The stand-in drops the connection when surface 99 is created. Sending on afterwards must
     * fail with a status, not kill this process with SIGPIPE. */
    EXPECT(NEWTON_STATUS_OK, newton_producer_create_surface(p, 99, "close"));
    NewtonStatus got = NEWTON_STATUS_OK;
    for (int i = 0; i < 100 && got != NEWTON_STATUS_CLOSED; i++) {
        got = newton_producer_wait(p, 10000, &json);
        newton_string_free(json);
    }
    check(got == NEWTON_STATUS_CLOSED, "poll reports the closed connection", got);
    check(readable(fd, 0), "the descriptor is readable once the connection ended",
          NEWTON_STATUS_OK);
    got = NEWTON_STATUS_OK;
    for (int i = 0; i < 50 && got == NEWTON_STATUS_OK; i++) got = newton_producer_update(p, 1, TREE);
    check(got == NEWTON_STATUS_CLOSED, "sending after the bridge left fails with CLOSED", got);
    EXPECT(NEWTON_STATUS_CLOSED, newton_producer_sync(p, 1000, NULL));

    /* Destroyed handles stay invalid. */
    EXPECT(NEWTON_STATUS_OK, newton_producer_destroy(p));
    EXPECT(NEWTON_STATUS_INVALID_HANDLE, newton_producer_destroy(p));
    EXPECT(NEWTON_STATUS_INVALID_HANDLE, newton_producer_update(p, 1, TREE));
    key.text = NULL;
    EXPECT(NEWTON_STATUS_INVALID_HANDLE, newton_producer_key(p, &key, NULL));

    printf("%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}
