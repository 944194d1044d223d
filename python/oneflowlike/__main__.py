"""python -m oneflowlike --cmake-prefix-path: where CMake finds the C++ API's package
(find_package(oneflowlike CONFIG)), as torch.utils.cmake_prefix_path."""

import argparse

from oneflowlike.utils import cmake_prefix_path


def main():
    parser = argparse.ArgumentParser(prog="python -m oneflowlike", description=__doc__)
    parser.add_argument(
        "--cmake-prefix-path",
        action="store_true",
        help="print the folder to add to CMAKE_PREFIX_PATH for find_package(oneflowlike)",
    )
    args = parser.parse_args()
    if not args.cmake_prefix_path:
        parser.print_help()
        raise SystemExit(2)
    print(cmake_prefix_path)


if __name__ == "__main__":
    main()
