"""Soak clients for `elevator serve`: many real NBD clients (libnbd, through
its Python bindings) at once, connecting, reading, writing, flushing and
going away at random moments, then a check that every completed write is
still there. Run by tests/soak.rs with Debian's /usr/bin/python3 (the
python3-libnbd package); standard library and libnbd only.

    soak.py soak --uri URI [--uri URI ...] --size BYTES --clients N
                 --seconds S --seed N --state FILE
    soak.py verify --uri URI --state FILE

`soak` drives N libnbd handles from one thread with the asynchronous API
(aio_connect_uri, aio_pread, aio_pwrite, aio_flush; each handle's fd and
direction polled with select.poll, then aio_notify_read/write). Client slot
k owns the k-th N-th of the export, in 4 KiB blocks, so no two clients
write the same bytes. Every written block is stamped with (slot, block,
generation), its 32-byte record repeated to fill it. A slot never has two
requests on one block at once, so each block's last completed write is
known. Each client lives for a random number of requests and then ends in
one of five ways: NBD_CMD_DISC once idle; DISC with requests in flight;
closed abruptly with requests in flight; closed while a 256 KiB write may
be half sent; or closed in the handshake. A new client takes its slot at
once, so N stay connected. A write in flight when its client vanished may
land on the export at any time (NBD orders nothing between connections),
so its blocks keep it as a possible value ("ghost"), and the slot leaves
them alone for a quarantine of a few seconds. Reads check the blocks they
return against what the slot knows. At the end the state (each block's
last completed generation and its ghosts) goes to FILE, and the op counts
to stdout as one JSON object.

`verify` reads the whole export over a fresh connection and checks that
every block holds its last completed write, or one of its ghosts, whole
and stamped for its own slot and block; zero if never written. It prints
its counts as JSON and exits 1 listing the first bad blocks.
"""

import argparse
import json
import random
import select
import struct
import sys
import time

import nbd

BLOCK = 4096
RECORD = struct.Struct("<4sIQQQ")
MAGIC = b"SOAK"
# How long a block written by a vanished client is left alone.
QUARANTINE_S = 5.0
# Requests in flight per client, at most.
MAX_DEPTH = 16
# Blocks in the write a "mid-request" client may leave half sent.
BIG_WRITE_BLOCKS = 64
ENDINGS = ["disc", "disc_in_flight", "abrupt", "mid_request", "handshake"]
ENDING_WEIGHTS = [30, 20, 30, 15, 5]


def check_sum(slot, block, gen):
    """The record's last field: ties the stamp's fields together."""
    return (slot * 0x100000001B3 ^ block * 0x9E3779B97F4A7C15 ^ gen) & (2**64 - 1)


def stamp(slot, block, gen):
    """A block's contents for generation `gen` (gen 0 is all zeroes)."""
    if gen == 0:
        return bytes(BLOCK)
    rec = RECORD.pack(MAGIC, slot, block, gen, check_sum(slot, block, gen))
    return rec * (BLOCK // RECORD.size)


def generation_of(data, slot, block):
    """The generation a block's bytes hold, or None when they are not a
    whole, valid stamp of this slot and block (torn, misplaced, garbage)."""
    if data == bytes(BLOCK):
        return 0
    try:
        magic, s, b, gen, _ = RECORD.unpack_from(data, 0)
    except struct.error:
        return None
    if magic != MAGIC or s != slot or b != block:
        return None
    return gen if data == stamp(slot, block, gen) else None


class Slot:
    """One N-th of the export, and what is known of each of its blocks."""

    def __init__(self, index, first_block, blocks):
        self.index = index
        self.first_block = first_block
        self.blocks = blocks
        self.done = [0] * blocks  # last completed write's generation
        self.ghosts = [[] for _ in range(blocks)]
        self.busy = [False] * blocks
        self.quiet_until = [0.0] * blocks
        self.next_gen = 1

    def free(self, b, n, now):
        """Whether blocks b..b+n may take a request now."""
        if b + n > self.blocks:
            return False
        return all(not self.busy[i] and self.quiet_until[i] <= now for i in range(b, b + n))

    def set_busy(self, b, n, busy):
        for i in range(b, b + n):
            self.busy[i] = busy

    def offset(self, b):
        return (self.first_block + b) * BLOCK


class Counts:
    """What happened, for the report."""

    def __init__(self):
        self.c = {}

    def add(self, key, n=1):
        self.c[key] = self.c.get(key, 0) + n


class Client:
    """One libnbd handle serving a slot until its ending."""

    def __init__(self, slot, uri, rng, counts):
        self.slot = slot
        self.uri = uri
        self.counts = counts
        self.ending = rng.choices(ENDINGS, ENDING_WEIGHTS)[0]
        self.budget = rng.randint(20, 1500)
        self.depth = rng.randint(1, MAX_DEPTH)
        self.issued = 0
        self.in_flight = {}  # id -> (kind, block, count, gen)
        self.next_id = 0
        self.gone = False
        self.disc_sent = False
        self.notified = 0
        self.h = nbd.NBD()
        self.h.aio_connect_uri(uri)
        counts.add("connections")
        counts.add("connections_" + ("tcp" if uri.startswith("nbd://") else "unix"))

    def connected(self):
        return self.h.aio_is_ready() or self.h.aio_is_processing()

    def issue(self, rng, now):
        """Start one request (read, write or flush) if a range is free."""
        slot = self.slot
        roll = rng.random()
        if roll < 0.08:
            op = self._start("flush", 0, 0, 0, None)
            self.h.aio_flush(completion=self._completion(op))
            return True
        n = rng.randint(1, 4)
        for _ in range(4):
            b = rng.randrange(slot.blocks)
            if slot.free(b, n, now):
                break
        else:
            return False
        slot.set_busy(b, n, True)
        if roll < 0.54:
            self._write(b, n)
        else:
            buf = nbd.Buffer(n * BLOCK)
            op = self._start("read", b, n, 0, buf)
            self.h.aio_pread(buf, slot.offset(b), completion=self._completion(op))
        return True

    def issue_big_write(self, rng, now):
        """A write of BIG_WRITE_BLOCKS blocks; True if one was issued and
        libnbd could not send it all at once (the socket is full)."""
        slot = self.slot
        for _ in range(8):
            b = rng.randrange(slot.blocks - BIG_WRITE_BLOCKS + 1)
            if slot.free(b, BIG_WRITE_BLOCKS, now):
                break
        else:
            return False
        slot.set_busy(b, BIG_WRITE_BLOCKS, True)
        self._write(b, BIG_WRITE_BLOCKS)
        return bool(self.h.aio_get_direction() & nbd.AIO_DIRECTION_WRITE)

    def _write(self, b, n):
        """Issue a write of blocks b..b+n (marked busy by the caller), each
        stamped with the slot's next generation."""
        slot = self.slot
        gen = slot.next_gen
        slot.next_gen += 1
        data = b"".join(stamp(slot.index, b + i, gen) for i in range(n))
        buf = nbd.Buffer.from_bytearray(data)
        op = self._start("write", b, n, gen, buf)
        self.h.aio_pwrite(buf, slot.offset(b), completion=self._completion(op))

    def _start(self, kind, b, n, gen, buf):
        op = self.next_id
        self.next_id += 1
        self.in_flight[op] = (kind, b, n, gen, buf)
        self.issued += 1
        return op

    def _completion(self, op):
        def done(err):
            if self.gone:
                return 1
            self._complete(op, err.value if hasattr(err, "value") else int(err))
            return 1

        return done

    def _complete(self, op, err):
        kind, b, n, gen, buf = self.in_flight.pop(op)
        slot = self.slot
        counts = self.counts
        if kind == "flush":
            counts.add("flushes" if err == 0 else "errors")
            return
        slot.set_busy(b, n, False)
        if err != 0:
            counts.add("errors")
            if kind == "write":
                # It may or may not have reached the export.
                for i in range(b, b + n):
                    slot.ghosts[i].append(gen)
            return
        if kind == "write":
            counts.add("writes")
            counts.add("write_bytes", n * BLOCK)
            for i in range(b, b + n):
                slot.done[i] = gen
            return
        counts.add("reads")
        counts.add("read_bytes", n * BLOCK)
        data = buf.to_bytearray()
        for i in range(n):
            blk = bytes(data[i * BLOCK : (i + 1) * BLOCK])
            got = generation_of(blk, slot.index, b + i)
            allowed = [slot.done[b + i]] + slot.ghosts[b + i]
            if got not in allowed:
                counts.add("read_mismatches")
                print(
                    f"soak: slot {slot.index} block {b + i}: read generation {got}, "
                    f"expected one of {allowed}",
                    file=sys.stderr,
                )

    def vanish(self, now):
        """Forget the handle: its writes in flight become ghosts."""
        slot = self.slot
        for kind, b, n, gen, _ in self.in_flight.values():
            if kind == "flush":
                continue
            slot.set_busy(b, n, False)
            if kind == "write":
                for i in range(b, b + n):
                    slot.quiet_until[i] = now + QUARANTINE_S
                    slot.ghosts[i].append(gen)
        self.counts.add("requests_abandoned", len(self.in_flight))
        self.in_flight.clear()
        self.gone = True
        h, self.h = self.h, None
        del h  # closes the socket now

    def events(self):
        """The poll events this handle waits for (0 if none)."""
        d = self.h.aio_get_direction()
        ev = 0
        if d & nbd.AIO_DIRECTION_READ:
            ev |= select.POLLIN
        if d & nbd.AIO_DIRECTION_WRITE:
            ev |= select.POLLOUT
        return ev


def end_client(c, rng, now, counts):
    """Carry out a client's ending, once its budget is spent (or the run is
    over: "drain"). True when the handle is gone; False while it waits
    (for its requests to finish, or the server to close after DISC)."""
    busy = bool(c.in_flight)
    if c.ending == "abrupt":
        counts.add("ended_abruptly_in_flight" if busy else "ended_abruptly_idle")
    elif c.ending == "mid_request":
        if c.issue_big_write(rng, now):
            counts.add("ended_mid_request")
        else:
            counts.add("ended_abruptly_in_flight" if c.in_flight else "ended_abruptly_idle")
    elif c.ending == "disc_in_flight" or not busy:
        counts.add("ended_disc_in_flight" if busy else "ended_disc_idle")
        c.h.aio_disconnect(0)
        c.disc_sent = True
        return False
    else:
        return False  # "disc" or "drain": wait until idle
    c.vanish(now)
    return True


def run_soak(args):
    rng = random.Random(args.seed)
    counts = Counts()
    n = args.clients
    total_blocks = args.size // BLOCK
    per_slot = total_blocks // n
    if per_slot < BIG_WRITE_BLOCKS:
        sys.exit(f"soak: {args.size} bytes give each of {n} clients too few blocks")
    slots = [Slot(k, k * per_slot, per_slot) for k in range(n)]
    clients = [Client(slots[k], rng.choice(args.uri), rng, counts) for k in range(n)]
    start = time.monotonic()
    end = start + args.seconds
    draining = False
    drain_deadline = None

    while True:
        now = time.monotonic()
        if not draining and now >= end:
            draining = True
            drain_deadline = now + 60
            for c in clients:
                if c is not None:
                    c.ending = "drain"
        if draining:
            if all(c is None for c in clients):
                break
            if now > drain_deadline:
                sys.exit("soak: clients did not finish within 60 s of the end")

        # Requests, endings and replacements.
        for k, c in enumerate(clients):
            if c is None:
                continue
            h = c.h
            if h.aio_is_dead() or (h.aio_is_closed() and not c.disc_sent):
                counts.add("connections_lost")
                print(f"soak: slot {k}: the connection died: {h.aio_is_dead()}", file=sys.stderr)
                c.vanish(now)
                clients[k] = None if draining else Client(slots[k], rng.choice(args.uri), rng, counts)
                continue
            if c.disc_sent:
                if h.aio_is_closed():
                    # Whatever never got its reply is a ghost.
                    c.vanish(now)
                    clients[k] = None if draining else Client(slots[k], rng.choice(args.uri), rng, counts)
                continue
            if c.ending == "handshake" and not c.connected():
                if c.notified > 0:
                    counts.add("ended_in_handshake")
                    c.vanish(now)
                    clients[k] = Client(slots[k], rng.choice(args.uri), rng, counts)
                continue
            if not c.connected():
                continue
            if c.ending == "handshake":
                # It got through the handshake before we could close it.
                c.ending = "abrupt"
            if c.issued >= c.budget or c.ending == "drain":
                if end_client(c, rng, now, counts):
                    clients[k] = None if draining else Client(slots[k], rng.choice(args.uri), rng, counts)
                continue
            while len(c.in_flight) < c.depth and c.issued < c.budget:
                if not c.issue(rng, now):
                    break

        # Wait for the sockets.
        poller = select.poll()
        by_fd = {}
        for c in clients:
            if c is None:
                continue
            ev = c.events()
            if ev:
                fd = c.h.aio_get_fd()
                poller.register(fd, ev)
                by_fd[fd] = c
        for fd, ev in poller.poll(50):
            c = by_fd[fd]
            if c.h is None:
                continue
            c.notified += 1
            if ev & (select.POLLIN | select.POLLHUP | select.POLLERR):
                c.h.aio_notify_read()
            elif ev & select.POLLOUT:
                c.h.aio_notify_write()

    counts.add("seconds", round(time.monotonic() - start, 1))
    state = {
        "size": args.size,
        "clients": n,
        "blocks_per_slot": per_slot,
        "done": [s.done for s in slots],
        "ghosts": [{str(i): g for i, g in enumerate(s.ghosts) if g} for s in slots],
    }
    with open(args.state, "w") as f:
        json.dump(state, f)
    counts.add("ghost_blocks", sum(len(g) for g in state["ghosts"]))
    print(json.dumps(counts.c, sort_keys=True))
    return 0 if counts.c.get("read_mismatches", 0) == 0 else 1


def run_verify(args):
    with open(args.state) as f:
        state = json.load(f)
    h = nbd.NBD()
    h.connect_uri(args.uri[0])
    per_slot = state["blocks_per_slot"]
    chunk_blocks = 256
    bad = []
    counts = Counts()
    for k in range(state["clients"]):
        done = state["done"][k]
        ghosts = state["ghosts"][k]
        for first in range(0, per_slot, chunk_blocks):
            n = min(chunk_blocks, per_slot - first)
            data = h.pread(n * BLOCK, (k * per_slot + first) * BLOCK)
            for i in range(n):
                b = first + i
                got = generation_of(data[i * BLOCK : (i + 1) * BLOCK], k, b)
                allowed = [done[b]] + ghosts.get(str(b), [])
                if got == done[b]:
                    counts.add("blocks_last_completed")
                elif got in allowed:
                    counts.add("blocks_ghost")
                else:
                    bad.append((k, b, got, allowed))
    counts.add("blocks_bad", len(bad))
    h.shutdown()
    print(json.dumps(counts.c, sort_keys=True))
    for k, b, got, allowed in bad[:20]:
        print(
            f"verify: slot {k} block {b}: holds generation {got}, expected one of {allowed}",
            file=sys.stderr,
        )
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=["soak", "verify"])
    p.add_argument("--uri", action="append", required=True)
    p.add_argument("--size", type=int, default=64 << 20)
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--seconds", type=float, default=25)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--state", required=True)
    args = p.parse_args()
    sys.exit(run_soak(args) if args.mode == "soak" else run_verify(args))


if __name__ == "__main__":
    main()
