#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
extern char **environ;
int main(int argc, char **argv) {
  printf("UID %d GID %d\n", (int)getuid(), (int)getgid());
  for (int i = 1; i < argc; i++) printf("ARG %s\n", argv[i]);
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd)) printf("PWD %s\n", cwd);
  for (char **e = environ; *e; e++) printf("ENV %s\n", *e);
  const char *paths[] = {"/etc/Agentfile", "/etc/agent.yaml", "/etc/context/AGENT.md",
    "/etc/context/SOUL.md", "/etc/context/MOUNTS.md", "/etc/data/notes.txt", "/opt/bins/tool",
    "/opt/runtime/runtime", 0};
  for (int i = 0; paths[i]; i++) if (access(paths[i], F_OK) == 0) printf("TREE %s\n", paths[i]);
  char buf[256];
  FILE *f = fopen("/data/in.txt", "r");
  if (f) { if (fgets(buf, sizeof buf, f)) printf("MOUNT %s\n", strtok(buf, "\n")); fclose(f); }
  f = fopen("/data/new", "w");
  printf("MOUNTRO %s\n", f ? "no" : "yes");
  if (f) fclose(f);
  f = fopen("/out/result.txt", "w");
  if (f) { fputs("written by the runtime\n", f); fclose(f); }
  printf("OUTRW %s\n", f ? "yes" : "no");
  f = fopen("/workspace/probe", "w");
  printf("WORKSPACE %s\n", f ? "yes" : "no");
  if (f) fclose(f);
  const char *writable[][2] = {{"HOME", "/home/probe"}, {"TMP", "/tmp/probe"},
    {"VARLIB", "/var/lib/probe"}};
  for (int i = 0; i < 3; i++) {
    f = fopen(writable[i][1], "w");
    printf("%s %s\n", writable[i][0], f ? "yes" : "no");
    if (f) fclose(f);
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) { char *a[] = {"tool", 0}; execvp("tool", a); _exit(127); }
  int st = 0;
  waitpid(pid, &st, 0);
  printf("END\n");
  fflush(stdout);
  if (getenv("RUNTIME_HOLD")) sleep(600);
  return 0;
}
