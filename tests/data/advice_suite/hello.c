/* hello.c: what the gcc case compiles and links. */
#include <stdio.h>

int main(void)
{
    puts("hello");
    return 0;
}
