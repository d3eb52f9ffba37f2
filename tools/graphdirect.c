#include "graphdirect.h"
#include <stdio.h>
int main(void) { printf("graphdirect %s\n", gd_version()); return 0; }
