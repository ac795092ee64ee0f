/// The release, as `blobd --version` prints it and `/metrics` reports it in `blobd_build_info`.
let blobdVersion = "1.2.0"
