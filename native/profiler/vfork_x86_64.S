/* vfork_x86_64.S — the runtime's vfork: note the fork and mark the thread (iol_vfork_prepare), then jump to
 * the C library's vfork with the caller's own return address on the stack, so that child and parent both
 * return straight to the caller. A C wrapper cannot do this (see procs.c). */
#if defined(__x86_64__)
    .text
    .globl vfork
    .type vfork, @function
    .p2align 4
vfork:
    .cfi_startproc
    subq $8, %rsp
    .cfi_adjust_cfa_offset 8
    call iol_vfork_prepare
    addq $8, %rsp
    .cfi_adjust_cfa_offset -8
    jmp *%rax
    .cfi_endproc
    .size vfork, .-vfork
#endif
    .section .note.GNU-stack,"",@progbits
