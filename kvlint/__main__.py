from kvlint.cli import console_main

console_main()
