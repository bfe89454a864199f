/* Reference sample of C-like notation: a small ring buffer with a test driver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAPACITY 16

typedef struct {
    int data[CAPACITY];
    size_t head;
    size_t tail;
    size_t count;
} ring_t;

static void ring_init(ring_t *r) {
    memset(r, 0, sizeof(*r));
}

static int ring_push(ring_t *r, int value) {
    if (r->count == CAPACITY) {
        return -1;
    }
    r->data[r->tail] = value;
    r->tail = (r->tail + 1) % CAPACITY;
    r->count++;
    return 0;
}

static int ring_pop(ring_t *r, int *out) {
    if (r->count == 0) {
        return -1;
    }
    *out = r->data[r->head];
    r->head = (r->head + 1) % CAPACITY;
    r->count--;
    return 0;
}

unsigned int checksum(const unsigned char *buf, size_t len) {
    unsigned int sum = 0;
    for (size_t i = 0; i < len; i++) {
        sum = (sum << 1) ^ buf[i];
        if (sum & 0x80000000u) {
            sum ^= 0x04C11DB7u;
        }
    }
    return sum;
}

int main(int argc, char **argv) {
    ring_t r;
    int value, total = 0;
    ring_init(&r);
    for (int i = 0; i < 20; i++) {
        if (ring_push(&r, i * i) != 0) {
            fprintf(stderr, "buffer full at %d\n", i);
            break;
        }
    }
    while (ring_pop(&r, &value) == 0) {
        total += value;
    }
    printf("total = %d, checksum = %u\n", total, checksum((const unsigned char *)argv[0], strlen(argv[0])));
    switch (argc) {
        case 1: return EXIT_SUCCESS;
        default: return total > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
    }
}
