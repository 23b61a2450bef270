//! Memory for brisk's data path: a process-wide pool of fixed-size blocks, a hard memory budget, and
//! exact-size buffers.
