// The header from C++: it compiles, links and answers (extern "C").
#include <cstdio>
#include <cstring>
#include <string>

#include "zaris.h"

int main() {
    const std::string key = "{user1000}.following";
    const uint16_t slot = zaris_slot_for_key(reinterpret_cast<const uint8_t *>(key.data()), key.size());
    zaris_retry_loop state;
    zaris_decision decision;
    const zaris_outcome moved = {ZARIS_OUTCOME_STATUS, ZARIS_STATUS_MOVED};
    if (zaris_retry_loop_init(&state, nullptr) != ZARIS_OK ||
        zaris_retry_loop_record(&state, moved, 60000, &decision) != ZARIS_OK) {
        std::puts("retry loop failed");
        return 1;
    }
    if (slot != 3443 || decision.kind != ZARIS_DECISION_RETRY || decision.delay_ms != 100) {
        std::printf("slot %u, decision %d\n", slot, decision.kind);
        return 1;
    }
    std::puts("ok: C++");
    return 0;
}
