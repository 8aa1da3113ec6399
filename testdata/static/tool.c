#include <stdio.h>
int main(void) { printf("TOOL tool-ran\n"); return 0; }
