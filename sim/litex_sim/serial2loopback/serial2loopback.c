/*
 * litex_sim module: a serial byte stream of the simulated SoC on a TCP port of 127.0.0.1
 * only. The rig's host bridge (UARTBone) is a Wishbone master over the whole bus, so its
 * port must not be reachable from other machines; LiteX's own serial2tcp listens on every
 * interface (INADDR_ANY). One client at a time: a second connection is closed at once,
 * since two clients' bridge requests would interleave on the one stream.
 *
 * sim_config: add_module("serial2loopback", ("serial", 1), args={"port": 2430})
 * The pads are a stream pair as RS232PHYModel's: source_* (SoC to host, always taken) and
 * sink_* (host to SoC, offered while bytes wait). Bytes move on rising edges of sys_clk.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <json-c/json.h>

#include "error.h"
#include "modules.h"

#define TAG "[serial2loopback] "
#define RING 65536 /* bytes each way; a bridge request or answer is about 1 KiB at most */
/*
 * Bytes to the host go out once the SoC has sent nothing for this many cycles (an answer is
 * whole) or a send's worth has gathered, on a socket without Nagle's algorithm. Sent a byte
 * at a time, an answer's later bytes waited for the host's delayed ACK of its first: every
 * bridge read took 40 ms whatever its length, and a ring drain carried 102 records a wall
 * second; whole answers (and the host's requests in one piece, fisrig.targets.rig.bridge) 3,777
 * (rtl.bridge_records_per_s).
 */
#define QUIET_CYCLES 32
#define SEND_BYTES 8192

struct ring {
  unsigned char b[RING];
  size_t head, len;
};

struct session_s {
  char *sys_clk;
  char *tx, *tx_valid, *tx_ready; /* SoC to host */
  char *rx, *rx_valid, *rx_ready; /* host to SoC */
  clk_edge_state_t edge;
  struct evconnlistener *listener;
  struct event *ev;
  int fd; /* the client, or -1 */
  struct ring in, out;
  unsigned quiet; /* cycles since the SoC last sent a byte */
  unsigned long dropped;
};

static struct event_base *base;

static size_t ring_room(const struct ring *r) { return RING - r->len; }

static void ring_put(struct ring *r, const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; ++i) r->b[(r->head + r->len + i) % RING] = p[i];
  r->len += n;
}

static void drop_client(struct session_s *s) {
  if (s->ev) {
    event_free(s->ev);
    s->ev = NULL;
  }
  if (s->fd >= 0) close(s->fd);
  s->fd = -1;
  s->in.len = s->out.len = 0;
}

static void on_readable(evutil_socket_t fd, short what, void *arg) {
  struct session_s *s = arg;
  unsigned char buf[4096];
  size_t room = ring_room(&s->in);
  (void)what;
  if (!room) return; /* the SoC has not taken what came; read again later */
  ssize_t n = recv(fd, buf, room < sizeof buf ? room : sizeof buf, 0);
  if (n > 0) {
    ring_put(&s->in, buf, (size_t)n);
  } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    drop_client(s); /* closed by the client, or broken */
  }
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *addr, int len, void *arg) {
  struct session_s *s = arg;
  (void)l, (void)addr, (void)len;
  if (s->fd >= 0) {
    close(fd);
    return;
  }
  evutil_make_socket_nonblocking(fd);
  int on = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  s->fd = fd;
  s->ev = event_new(base, fd, EV_READ | EV_PERSIST, on_readable, s);
  event_add(s->ev, NULL);
}

static int start(void *b) {
  base = b;
  return RC_OK;
}

static int new_sess(void **sess, char *args) {
  json_object *js = args ? json_tokener_parse(args) : NULL, *v = NULL;
  long port = 0;
  if (js && json_object_object_get_ex(js, "port", &v)) port = strtol(json_object_get_string(v), NULL, 10);
  if (js) json_object_put(js);
  if (port < 1 || port > 65535) {
    eprintf(TAG "args need a \"port\" of 1..65535 (got %s)\n", args ? args : "none");
    return RC_JSERROR;
  }
  struct session_s *s = calloc(1, sizeof *s);
  if (!s) return RC_NOENMEM;
  s->fd = -1;
  struct sockaddr_in sin;
  memset(&sin, 0, sizeof sin);
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK); /* 127.0.0.1, never every interface */
  sin.sin_port = htons((uint16_t)port);
  s->listener = evconnlistener_new_bind(base, on_accept, s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, -1,
                                        (struct sockaddr *)&sin, sizeof sin);
  if (!s->listener) {
    eprintf(TAG "cannot listen on 127.0.0.1:%ld: %s\n", port, strerror(errno));
    free(s);
    return RC_ERROR;
  }
  *sess = s;
  return RC_OK;
}

static void *pad(struct pad_s *pads, const char *name) {
  for (int i = 0; pads[i].name; ++i)
    if (!strcmp(pads[i].name, name)) return pads[i].signal;
  return NULL;
}

static int add_pads(void *sess, struct pad_list_s *plist) {
  struct session_s *s = sess;
  if (!strcmp(plist->name, "sys_clk")) {
    s->sys_clk = pad(plist->pads, "sys_clk");
    return s->sys_clk ? RC_OK : RC_ERROR;
  }
  if (strcmp(plist->name, "serial")) return RC_OK;
  s->tx = pad(plist->pads, "source_data");
  s->tx_valid = pad(plist->pads, "source_valid");
  s->tx_ready = pad(plist->pads, "source_ready");
  s->rx = pad(plist->pads, "sink_data");
  s->rx_valid = pad(plist->pads, "sink_valid");
  s->rx_ready = pad(plist->pads, "sink_ready");
  if (!s->tx || !s->tx_valid || !s->tx_ready || !s->rx || !s->rx_valid || !s->rx_ready) {
    eprintf(TAG "the serial pads lack a source_* or sink_* signal\n");
    return RC_ERROR;
  }
  return RC_OK;
}

static void flush_out(struct session_s *s) {
  while (s->out.len && s->fd >= 0) {
    size_t run = RING - s->out.head < s->out.len ? RING - s->out.head : s->out.len;
    ssize_t n = send(s->fd, s->out.b + s->out.head, run, MSG_NOSIGNAL);
    if (n <= 0) {
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
      drop_client(s);
      return;
    }
    s->out.head = (s->out.head + (size_t)n) % RING;
    s->out.len -= (size_t)n;
  }
}

static int tick(void *sess, uint64_t time_ps) {
  struct session_s *s = sess;
  (void)time_ps;
  if (!clk_pos_edge(&s->edge, *s->sys_clk)) return RC_OK;
  *s->tx_ready = 1;
  if (!*s->tx_valid) {
    if (s->quiet < QUIET_CYCLES) ++s->quiet;
  } else {
    s->quiet = 0;
    unsigned char c = (unsigned char)*s->tx;
    if (s->fd < 0) {
      /* nobody listening: the byte goes nowhere, as on an unplugged serial line */
    } else if (ring_room(&s->out)) {
      ring_put(&s->out, &c, 1);
    } else if (!s->dropped++) {
      eprintf(TAG "the client does not read: bytes to it are dropped\n");
    }
  }
  if (s->out.len && (s->quiet == QUIET_CYCLES || s->out.len >= SEND_BYTES)) flush_out(s);
  *s->rx_valid = 0;
  if (s->in.len) {
    *s->rx = (char)s->in.b[s->in.head];
    *s->rx_valid = 1;
    if (*s->rx_ready) {
      s->in.head = (s->in.head + 1) % RING;
      --s->in.len;
    }
  }
  return RC_OK;
}

static int close_sess(void *sess) {
  struct session_s *s = sess;
  drop_client(s);
  if (s->listener) evconnlistener_free(s->listener);
  free(s);
  return RC_OK;
}

static struct ext_module_s ext_mod = {"serial2loopback", start, new_sess, add_pads, close_sess, tick};

int litex_sim_ext_module_init(int (*register_module)(struct ext_module_s *)) {
  return register_module(&ext_mod);
}
