/* The C ABI from C: slots against vectors a real redis-server made
 * (CLUSTER KEYSLOT), the batch calls, error replies, the retry machine
 * through MOVED, ASK and TRYAGAIN, and every documented error code.
 *
 * Usage: check VECTORS. VECTORS holds records of
 *   kind (u8: 0 bytes, 1 UTF-16) | len (u32 LE, bytes or units) | key | slot (u16 LE)
 * Prints "ok: N keys" and exits 0, or names the first failure and exits 1. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaris.h"

static int failures = 0;

#define CHECK(cond, ...)                                      \
    do {                                                      \
        if (!(cond)) {                                        \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);   \
            fprintf(stderr, __VA_ARGS__);                     \
            fprintf(stderr, "\n");                            \
            failures++;                                       \
        }                                                     \
    } while (0)

static uint32_t read_u32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint16_t read_u16(const uint8_t *p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint8_t *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    uint8_t *data;
    long size;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, 0, SEEK_SET);
    data = malloc(size > 0 ? (size_t)size : 1);
    if (data && fread(data, 1, (size_t)size, f) != (size_t)size) {
        free(data);
        data = NULL;
    }
    fclose(f);
    *len = (size_t)size;
    return data;
}

/* Every vector, one key at a time, then the byte keys in one batch call
 * and (those that are lines) in one newline-separated call. */
static size_t check_vectors(const uint8_t *data, size_t len) {
    size_t at = 0, keys = 0, byte_keys = 0, total = 0, lines_len = 0, line_keys = 0;
    size_t *offsets;
    uint8_t *packed, *lines;
    uint16_t *expected, *lines_expected, *slots;

    /* First pass: sizes. */
    while (at < len) {
        uint8_t kind = data[at];
        uint32_t n = read_u32(data + at + 1);
        size_t bytes = kind == 0 ? n : 2 * (size_t)n;
        if (kind == 0) {
            byte_keys++;
            total += n;
        }
        at += 5 + bytes + 2;
    }
    offsets = malloc((byte_keys + 1) * sizeof(size_t));
    packed = malloc(total + 1);
    lines = malloc(total + byte_keys + 1);
    expected = malloc((byte_keys + 1) * sizeof(uint16_t));
    lines_expected = malloc((byte_keys + 1) * sizeof(uint16_t));
    slots = malloc((byte_keys + 1) * sizeof(uint16_t));
    offsets[0] = 0;

    at = 0;
    byte_keys = 0;
    while (at < len) {
        uint8_t kind = data[at];
        uint32_t n = read_u32(data + at + 1);
        const uint8_t *key = data + at + 5;
        size_t bytes = kind == 0 ? n : 2 * (size_t)n;
        uint16_t want = read_u16(key + bytes);
        if (kind == 0) {
            uint16_t got = zaris_slot_for_key(key, n);
            CHECK(got == want, "key %zu (%u bytes): slot %u, CLUSTER KEYSLOT %u", keys, n, got, want);
            memcpy(packed + offsets[byte_keys], key, n);
            offsets[byte_keys + 1] = offsets[byte_keys] + n;
            expected[byte_keys] = want;
            byte_keys++;
            /* A key with no newline and no trailing CR is a line as is. */
            if (!memchr(key, '\n', n) && !(n > 0 && key[n - 1] == '\r')) {
                memcpy(lines + lines_len, key, n);
                lines_len += n;
                lines[lines_len++] = '\n';
                lines_expected[line_keys++] = want;
            }
        } else {
            /* UTF-16 units, little-endian in the file: copy to aligned storage. */
            uint16_t *units = malloc((n + 1) * sizeof(uint16_t));
            uint32_t i;
            uint16_t got;
            for (i = 0; i < n; i++) units[i] = read_u16(key + 2 * i);
            got = zaris_slot_for_utf16(units, n);
            CHECK(got == want, "UTF-16 key %zu (%u units): slot %u, CLUSTER KEYSLOT %u", keys, n, got, want);
            free(units);
        }
        keys++;
        at += 5 + bytes + 2;
    }

    {
        size_t i, count = 0;
        int rc = zaris_slots_for_keys(packed, total, offsets, byte_keys, slots, byte_keys);
        CHECK(rc == ZARIS_OK, "zaris_slots_for_keys: %d", rc);
        for (i = 0; i < byte_keys; i++) {
            CHECK(slots[i] == expected[i], "batch key %zu: %u, want %u", i, slots[i], expected[i]);
        }
        rc = zaris_slots_for_lines(lines, lines_len, slots, byte_keys, &count);
        CHECK(rc == ZARIS_OK, "zaris_slots_for_lines: %d", rc);
        CHECK(count == line_keys, "lines: %zu keys, want %zu", count, line_keys);
        for (i = 0; i < count && i < line_keys; i++) {
            CHECK(slots[i] == lines_expected[i], "line %zu: %u, want %u", i, slots[i], lines_expected[i]);
        }
        /* Too small: the count needed, nothing written. */
        if (line_keys > 1) {
            rc = zaris_slots_for_lines(lines, lines_len, slots, 1, &count);
            CHECK(rc == ZARIS_ERR_BUFFER_TOO_SMALL, "lines into 1 slot: %d", rc);
            CHECK(count == line_keys, "lines needed: %zu", count);
        }
        rc = zaris_slots_for_keys(packed, total, offsets, byte_keys, slots, byte_keys - 1);
        CHECK(rc == ZARIS_ERR_BUFFER_TOO_SMALL, "batch into too few: %d", rc);
    }
    free(offsets);
    free(packed);
    free(lines);
    free(expected);
    free(lines_expected);
    free(slots);
    return keys;
}

static void check_spans_and_segments(void) {
    size_t start = 99, end = 99;
    uint16_t segment = 0;
    const char *tagged = "{user1000}.following";
    CHECK(zaris_slot_for_key((const uint8_t *)tagged, strlen(tagged)) == 3443, "the README's key");
    CHECK(zaris_hash_span((const uint8_t *)tagged, strlen(tagged), &start, &end) == ZARIS_OK, "span");
    CHECK(start == 1 && end == 9, "span of a tagged key: [%zu, %zu)", start, end);
    CHECK(zaris_hash_span((const uint8_t *)"foo{}{bar}", 10, &start, &end) == ZARIS_OK, "span");
    CHECK(start == 0 && end == 10, "an empty tag hashes the whole key: [%zu, %zu)", start, end);
    CHECK(zaris_hash_span(NULL, 0, &start, &end) == ZARIS_OK && start == 0 && end == 0, "empty key");
    CHECK(zaris_segment_for_slot(16383, 4, &segment) == ZARIS_OK && segment == 3, "last segment: %u", segment);
    CHECK(zaris_segment_for_slot(0, 4, &segment) == ZARIS_OK && segment == 0, "first segment");
    CHECK(zaris_slot_for_key(NULL, 0) == zaris_slot_for_key((const uint8_t *)"", 0), "the empty key");
}

static void check_error_codes(void) {
    size_t start, end;
    uint16_t slots[2], segment;
    size_t offsets[3] = {0, 2, 1};
    const char *name = NULL;
    zaris_retry_loop never_initialised;
    zaris_decision decision;
    zaris_outcome moved = {ZARIS_OUTCOME_STATUS, ZARIS_STATUS_MOVED};
    zaris_outcome bogus = {7, 0};
    zaris_retry_loop state;

    CHECK(zaris_slot_for_key(NULL, 3) == ZARIS_INVALID_SLOT, "NULL key with a length");
    CHECK(zaris_slot_for_utf16(NULL, 3) == ZARIS_INVALID_SLOT, "NULL units with a length");
    CHECK(zaris_hash_span(NULL, 5, &start, &end) == ZARIS_ERR_NULL, "span of NULL");
    CHECK(zaris_hash_span((const uint8_t *)"k", 1, NULL, &end) == ZARIS_ERR_NULL, "span into NULL");
    CHECK(zaris_segment_for_slot(1, 0, &segment) == ZARIS_ERR_INVALID_ARGUMENT, "zero segments");
    CHECK(zaris_segment_for_slot(16384, 4, &segment) == ZARIS_ERR_INVALID_ARGUMENT, "slot 16384");
    CHECK(zaris_slots_for_keys((const uint8_t *)"abc", 3, offsets, 2, slots, 2) == ZARIS_ERR_INVALID_ARGUMENT,
          "offsets going backwards");
    offsets[2] = 9;
    CHECK(zaris_slots_for_keys((const uint8_t *)"abc", 3, offsets, 2, slots, 2) == ZARIS_ERR_INVALID_ARGUMENT,
          "offsets past the buffer");
    CHECK(zaris_slots_for_keys((const uint8_t *)"abc", 3, NULL, 2, slots, 2) == ZARIS_ERR_NULL, "NULL offsets");
    CHECK(zaris_slots_for_lines((const uint8_t *)"a\nb", 3, slots, 2, NULL) == ZARIS_ERR_NULL, "NULL count");
    CHECK(zaris_status_name(8, &name) == ZARIS_ERR_INVALID_ARGUMENT, "status 8");
    CHECK(zaris_status_name(-1, &name) == ZARIS_ERR_INVALID_ARGUMENT, "status -1");
    CHECK(zaris_transport_failure_name(7, &name) == ZARIS_ERR_INVALID_ARGUMENT, "transport 7");
    memset(&never_initialised, 0, sizeof never_initialised);
    CHECK(zaris_retry_loop_record(&never_initialised, moved, 1000, &decision) == ZARIS_ERR_INVALID_ARGUMENT,
          "a loop never initialised");
    CHECK(zaris_retry_loop_init(NULL, NULL) == ZARIS_ERR_NULL, "init NULL");
    CHECK(zaris_retry_loop_init(&state, NULL) == ZARIS_OK, "init");
    CHECK(zaris_retry_loop_record(&state, bogus, 1000, &decision) == ZARIS_ERR_INVALID_ARGUMENT, "bogus outcome");
    CHECK(zaris_retry_loop_record(&state, moved, 1000, NULL) == ZARIS_ERR_NULL, "decision NULL");
    CHECK(zaris_parse_error_reply(NULL, 4, NULL) == ZARIS_ERR_NULL, "parse NULL");
    CHECK(sizeof(zaris_retry_loop) == ZARIS_RETRY_LOOP_SIZE, "size %zu", sizeof(zaris_retry_loop));
}

static zaris_error_reply parse(const char *text, int want_rc) {
    zaris_error_reply reply;
    int rc;
    memset(&reply, 0, sizeof reply);
    rc = zaris_parse_error_reply((const uint8_t *)text, strlen(text), &reply);
    CHECK(rc == want_rc, "parse %s: %d, want %d", text, rc, want_rc);
    return reply;
}

static void check_replies_and_retries(void) {
    zaris_error_reply moved = parse("-MOVED 3999 127.0.0.1:6381\r\n", ZARIS_OK);
    zaris_error_reply ask = parse("ASK 3999 10.0.0.7:7002", ZARIS_OK);
    zaris_error_reply tryagain = parse("-TRYAGAIN Multiple keys request during rehashing of slot", ZARIS_OK);
    zaris_error_reply down = parse("-CLUSTERDOWN The cluster is down", ZARIS_OK);
    zaris_retry_policy policy = {5, 100, 60000};
    zaris_retry_loop state;
    zaris_decision d;
    zaris_outcome reset = {ZARIS_OUTCOME_TRANSPORT, ZARIS_TRANSPORT_CONNECTION_RESET};
    uint32_t attempts = 0;
    uint64_t delay = 0;
    const char *name = NULL;

    parse("-ERR wrong number of arguments", ZARIS_ERR_NOT_ROUTING);
    parse("-MOVED 99999 127.0.0.1:6381", ZARIS_ERR_MALFORMED_REPLY);
    parse("-MOVED", ZARIS_ERR_MALFORMED_REPLY);
    parse("", ZARIS_ERR_MALFORMED_REPLY);

    CHECK(moved.kind == ZARIS_REPLY_MOVED && moved.slot == 3999 && moved.port == 6381, "MOVED read");
    CHECK(moved.host_len == 9 && memcmp(moved.host, "127.0.0.1", 9) == 0, "MOVED host");
    CHECK(moved.outcome.kind == ZARIS_OUTCOME_STATUS && moved.outcome.code == ZARIS_STATUS_MOVED, "MOVED outcome");
    CHECK(ask.kind == ZARIS_REPLY_ASK && ask.outcome.kind == ZARIS_OUTCOME_ASK && ask.port == 7002, "ASK read");
    CHECK(ask.status == ZARIS_STATUS_MIGRATING, "ASK status");
    CHECK(tryagain.kind == ZARIS_REPLY_STATUS && tryagain.status == ZARIS_STATUS_MIGRATING, "TRYAGAIN");
    CHECK(tryagain.host == NULL && tryagain.host_len == 0, "a status has no host");
    CHECK(down.status == ZARIS_STATUS_UNAVAILABLE, "CLUSTERDOWN");

    /* MOVED, then ASK, then TRYAGAIN, a dead socket, TRYAGAIN again. */
    CHECK(zaris_retry_loop_init(&state, &policy) == ZARIS_OK, "init");
    zaris_retry_loop_record(&state, moved.outcome, 60000, &d);
    CHECK(d.kind == ZARIS_DECISION_RETRY && d.refresh_map && d.delay_ms == 100, "after MOVED");
    zaris_retry_loop_record(&state, ask.outcome, 60000, &d);
    CHECK(d.kind == ZARIS_DECISION_FOLLOW_ASK, "after ASK: %d", d.kind);
    zaris_retry_loop_record(&state, tryagain.outcome, 60000, &d);
    CHECK(d.kind == ZARIS_DECISION_RETRY && !d.refresh_map && d.delay_ms == 2000, "after TRYAGAIN: %llu",
          (unsigned long long)d.delay_ms);
    zaris_retry_loop_record(&state, reset, 60000, &d);
    CHECK(d.kind == ZARIS_DECISION_RETRY && d.refresh_map && d.delay_ms == 400, "after a reset");
    zaris_retry_loop_record(&state, tryagain.outcome, 60000, &d);
    CHECK(d.kind == ZARIS_DECISION_GIVE_UP && d.stop_reason == ZARIS_STOP_ATTEMPTS_EXHAUSTED, "budget spent");
    CHECK(zaris_retry_loop_attempts(&state, &attempts) == ZARIS_OK && attempts == 5, "attempts %u", attempts);

    /* The deadline bounds it too; an answer returns at once. */
    zaris_retry_loop_init(&state, NULL);
    zaris_retry_loop_record(&state, moved.outcome, 50, &d);
    CHECK(d.kind == ZARIS_DECISION_GIVE_UP && d.stop_reason == ZARIS_STOP_DEADLINE_REACHED, "deadline");
    {
        zaris_outcome ok = {ZARIS_OUTCOME_STATUS, ZARIS_STATUS_OK};
        zaris_retry_loop_init(&state, NULL);
        zaris_retry_loop_record(&state, ok, -1, &d);
        CHECK(d.kind == ZARIS_DECISION_RETURN, "an answer");
    }
    CHECK(zaris_retry_delay(3, 100, ZARIS_STATUS_MIGRATING, -1, &delay) == ZARIS_OK && delay == 2000,
          "delay %llu", (unsigned long long)delay);
    CHECK(zaris_retry_delay(2, 100, -1, 150, &delay) == ZARIS_OK && delay == 150, "delay capped by time left");
    CHECK(zaris_retry_delay(1, 100, 42, -1, &delay) == ZARIS_ERR_INVALID_ARGUMENT, "bad status");
    CHECK(zaris_status_name(ZARIS_STATUS_MOVED, &name) == ZARIS_OK && strcmp(name, "Moved") == 0, "name");
    CHECK(zaris_transport_failure_name(ZARIS_TRANSPORT_TIMED_OUT, &name) == ZARIS_OK && strcmp(name, "TimedOut") == 0,
          "transport name");
    CHECK(strlen(zaris_crc_engine()) > 0, "engine name");
    /* The refresh's rules, as the client keeps them. */
    int refresh = -1;
    CHECK(zaris_refresh_decide(-1, false, 10, 500, &refresh) == ZARIS_OK && refresh == ZARIS_REFRESH_START, "first refresh");
    CHECK(zaris_refresh_decide(-1, true, 11, 500, &refresh) == ZARIS_OK && refresh == ZARIS_REFRESH_RIDE, "ride");
    CHECK(zaris_refresh_decide(20, false, 519, 500, &refresh) == ZARIS_OK && refresh == ZARIS_REFRESH_DEBOUNCED, "debounced");
    CHECK(zaris_refresh_decide(20, false, 520, 500, &refresh) == ZARIS_OK && refresh == ZARIS_REFRESH_START, "interval passed");
    CHECK(zaris_refresh_decide(20, false, 520, 500, NULL) == ZARIS_ERR_NULL, "null out");
    int64_t until = 0;
    CHECK(zaris_owner_wait_until(NULL, 100, 200, 15000, -1, &until) == ZARIS_OK && until == 15100, "wait %lld", (long long)until);
    CHECK(zaris_owner_wait_until(NULL, 100, 200, 15000, 3000, &until) == ZARIS_OK && until == 3000, "never past the deadline");
    CHECK(zaris_owner_wait_until(NULL, 100, 15100, 15000, -1, &until) == ZARIS_OK && until == -1, "waited out");
    zaris_redirect_memory redirects;
    bool looped = true;
    CHECK(zaris_redirect_memory_init(&redirects) == ZARIS_OK, "redirect memory");
    CHECK(zaris_redirect_memory_note(&redirects, 5, (const uint8_t *)"a:1", 3, (const uint8_t *)"b:1", 3, 10, &looped) == ZARIS_OK
          && !looped, "a first MOVED: churn");
    CHECK(zaris_redirect_memory_note(&redirects, 5, (const uint8_t *)"b:1", 3, (const uint8_t *)"a:1", 3, 30, &looped) == ZARIS_OK
          && looped, "undone within 2 s: a loop");
    CHECK(zaris_redirect_memory_note(&redirects, 9, (const uint8_t *)"c:1", 3, (const uint8_t *)"c:1", 3, 40, &looped) == ZARIS_OK
          && looped, "MOVED to the node asked");
    zaris_redirect_memory blank = {{0}};
    CHECK(zaris_redirect_memory_note(&blank, 1, NULL, 0, NULL, 0, 0, &looped) == ZARIS_ERR_INVALID_ARGUMENT, "never initialised");
    zaris_retry_policy once = {1, 100, -1};
    CHECK(zaris_owner_wait_until(&once, 0, 1, 15000, -1, &until) == ZARIS_OK && until == -1, "no retries, no wait");
}

int main(int argc, char **argv) {
    size_t len = 0, keys;
    uint8_t *data;
    if (argc != 2) {
        fprintf(stderr, "usage: %s VECTORS\n", argv[0]);
        return 2;
    }
    data = read_file(argv[1], &len);
    if (!data) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 2;
    }
    keys = check_vectors(data, len);
    free(data);
    check_spans_and_segments();
    check_error_codes();
    check_replies_and_retries();
    if (failures > 0) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    printf("ok: %zu keys, engine %s\n", keys, zaris_crc_engine());
    return 0;
}
