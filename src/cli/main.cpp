#include "cli_app.hpp"

int main(int argc, char** argv) { return ophook::cli::run_cli(argc, argv); }
