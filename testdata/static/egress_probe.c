/* The stand-in runtime of the egress suite: for each IPv4 HOST:PORT of $PROBE_TARGETS (comma
   separated) it tries a direct TCP connection and, when $HTTPS_PROXY is set, a CONNECT through
   that proxy, and prints one line per try: `direct HOST:PORT reached|blocked` and
   `proxy HOST:PORT <status line>`; "reached" means the target's greeting (`hi`) was read. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static int dial(const char *host, int port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (inet_pton(AF_INET, host, &a.sin_addr) != 1) return -1;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct timeval t = {3, 0};
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &t, sizeof t);
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
  if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) { close(s); return -1; }
  return s;
}

static int greeted(int s) {
  char buf[64];
  int n = read(s, buf, sizeof buf - 1);
  if (n <= 0) return 0;
  buf[n] = 0;
  return strstr(buf, "hi") != NULL;
}

int main(void) {
  const char *targets = getenv("PROBE_TARGETS");
  const char *proxy = getenv("HTTPS_PROXY");
  char list[1024];
  snprintf(list, sizeof list, "%s", targets ? targets : "");
  for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
    char host[256];
    int port = 0;
    if (sscanf(t, "%255[^:]:%d", host, &port) != 2) continue;
    int s = dial(host, port);
    printf("direct %s:%d %s\n", host, port, s >= 0 && greeted(s) ? "reached" : "blocked");
    if (s >= 0) close(s);
    if (proxy && strncmp(proxy, "http://", 7) == 0) {
      char ph[256];
      int pp = 0;
      if (sscanf(proxy + 7, "%255[^:]:%d", ph, &pp) != 2) continue;
      int p = dial(ph, pp);
      if (p < 0) { printf("proxy %s:%d unreachable\n", host, port); continue; }
      char req[600];
      snprintf(req, sizeof req, "CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n", host, port, host, port);
      write(p, req, strlen(req));
      char buf[512];
      int n = read(p, buf, sizeof buf - 1);
      buf[n > 0 ? n : 0] = 0;
      char *eol = strstr(buf, "\r\n");
      char *end = strstr(buf, "\r\n\r\n");
      int ok = strncmp(buf, "HTTP/1.1 200", 12) == 0;
      /* After a 200 the tunnel carries the target's greeting, which may have come in the same
         read as the proxy's answer. */
      int early = ok && end && strstr(end + 4, "hi") != NULL;
      if (eol) *eol = 0;
      printf("proxy %s:%d %s%s\n", host, port, buf, ok ? (early || greeted(p) ? " reached" : " silent") : "");
      close(p);
    }
  }
  fflush(stdout);
  return 0;
}
